/// `count` and `noun`, plural when it is not one: "1 share", "2 shares",
/// "1 native viewer".
public func counted(_ count: Int, _ noun: String) -> String {
    "\(count) \(noun)\(count == 1 ? "" : "s")"
}
