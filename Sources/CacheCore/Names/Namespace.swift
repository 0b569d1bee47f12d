import Synchronization

/// The one owner of names and metadata. Its state is reachable only inside `withLock`,
/// which holds the lock for memory work and for the first load of a directory, never for
/// an index commit (those go to the ``IndexWriter``) nor for disk I/O on file bytes.
///
/// Every hold hands the index changes it logged to the writer as one group, before the
/// lock is released: the writer's order is the order memory changed in, and it never
/// commits half of an operation.
final class Namespace: Sendable {
    private let state: Mutex<NamespaceState>
    private let writer: IndexWriter

    init(source: any DirectorySource, writer: IndexWriter) {
        state = Mutex(NamespaceState(source: source))
        self.writer = writer
    }

    func withLock<T>(_ body: (inout NamespaceState) throws -> T) rethrows -> T {
        try state.withLock { state in
            defer { writer.enqueue(state.takeOutbox()) }
            return try body(&state)
        }
    }
}
