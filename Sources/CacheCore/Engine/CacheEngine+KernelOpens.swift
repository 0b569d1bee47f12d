import CacheModel

/// Requests without a handle, once the kernel serves opens by itself (`kernel_hits`; see
/// ``Files`` and docs/no-open-hits.md): the adapter answers OPEN and FLUSH with ENOSYS, and
/// every READ, WRITE, FSYNC and FALLOCATE then names only the inode.
extension CacheEngine {
    /// Whether opens are the kernel's (set at INIT, before any request).
    public var servesOpensInKernel: Bool { files.servesOpensInKernel }

    public func serveOpensInKernel() { files.serveOpensInKernel() }

    /// ``readDescriptor(_:offset:size:isAccess:)`` for a READ with no handle.
    public func readDescriptor(ofFile id: EntryID, offset: Int64, size: Int) throws -> PinnedRead {
        try files.readDescriptor(ofFile: id, offset: offset, size: size)
    }

    /// ``read(_:offset:size:isAccess:)`` for a READ with no handle.
    public func read(ofFile id: EntryID, offset: Int64, size: Int) throws -> [UInt8] {
        try files.read(ofFile: id, offset: offset, size: size)
    }

    public func write(ofFile id: EntryID, offset: Int64, bytes: UnsafeRawBufferPointer,
                      clearingSetID: Bool = false) throws -> Int {
        try files.withKernelWriter(of: id) { handle in
            try files.write(handle, offset: offset, bytes: bytes, clearingSetID: clearingSetID)
        }
    }

    public func fallocate(ofFile id: EntryID, mode: Int32, offset: Int64, length: Int64) throws {
        try files.withKernelWriter(of: id) { handle in
            try files.fallocate(handle, mode: mode, offset: offset, length: length)
        }
    }

    public func fsync(ofFile id: EntryID, dataOnly: Bool) throws { try files.fsync(ofFile: id, dataOnly: dataOnly) }

    /// From now on the engine learns of the kernel's hits from `events`: the caller's thread
    /// runs ``KernelCloseEvents/run(_:)`` with ``kernelClosed(_:)``, and eviction passes catch
    /// up on them before they order victims.
    public func listen(to events: KernelCloseEvents) {
        eviction.kernelCloses.attach(events) { [files] batch in files.kernelClosed(batch) }
    }

    /// Closes the kernel reported (see ``KernelCloseEvents``).
    public func kernelClosed(_ batch: KernelCloseEvents.Batch) {
        files.kernelClosed(batch)
    }
}
