import Synchronization

/// The one owner of names and metadata. Its state is reachable only inside `withLock`,
/// which holds the lock for memory work and for the first load of a directory, never for
/// an index commit (those go to the ``IndexWriter``) nor for disk I/O on file bytes.
final class Namespace: Sendable {
    private let state: Mutex<NamespaceState>

    init(index: IndexStore) {
        state = Mutex(NamespaceState(index: index))
    }

    func withLock<T>(_ body: (inout NamespaceState) throws -> T) rethrows -> T {
        try state.withLock { try body(&$0) }
    }
}
