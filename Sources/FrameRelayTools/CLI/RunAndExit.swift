@preconcurrency import Glibc
import FrameRelaySystem

/// How both executables end: `body`'s status; 0 after printing the text of
/// a ``HelpRequested`` (`--help`, `--version`); 1 after one line,
/// `PROGRAM: error: …`, for anything else thrown.
public func runAndExit(_ program: String, _ body: () throws -> Int32) -> Never {
    do {
        exit(try body())
    } catch let help as HelpRequested {
        print(help.text)
        exit(0)
    } catch {
        // What was given (an option's value, a file's name) may hold control characters: written out, never sent to the terminal.
        writeStandardError("\(program): error: \(PeerText.quoted("\(error)", limit: 2000))\n")
        exit(1)
    }
}
