@preconcurrency import Glibc

/// Starts `body` on a new detached POSIX thread; false when no thread could
/// be made (then `body` never runs). The library does this itself rather
/// than through Foundation's `Thread`, so that programs that link it without
/// Foundation (broadcast-sim, for its memory limit) stay so.
@discardableResult
package func startDetachedThread(_ body: @escaping @Sendable () -> Void) -> Bool {
    final class Box: @unchecked Sendable {
        // @unchecked Sendable: handed to exactly one new thread, which alone uses it.
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    var thread = pthread_t()
    let status = pthread_create(&thread, nil, { argument in
        let box = Unmanaged<Box>.fromOpaque(argument!).takeRetainedValue()
        box.body()
        return nil
    }, box)
    if status == 0 {
        pthread_detach(thread)
    } else {
        Unmanaged<Box>.fromOpaque(box).release()
    }
    return status == 0
}
