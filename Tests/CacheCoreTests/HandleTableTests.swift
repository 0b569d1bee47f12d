@testable import CacheCore
import CacheModel
import Testing

/// Which handles bypass the kernel's page cache (`HandleTable.add`).
@Suite struct HandleTableTests {
    private func file(_ entry: EntryID, writable: Bool) -> OpenFile {
        OpenFile(entry: entry, fd: -1, writable: writable, pool: 2, sizeLimit: nil)
    }

    private func bypasses(_ table: HandleTable, _ handle: UInt64) throws -> Bool {
        try table.get(handle).bypassesPageCache
    }

    @Test func aWriterAloneBypassesAndEveryHandleOpenedMeanwhileToo() throws {
        let table = HandleTable()
        let writer = table.add(file(10, writable: true), writeOnly: true)
        let reader = table.add(file(10, writable: false))
        let readWriter = table.add(file(10, writable: true))
        let otherFile = table.add(file(11, writable: false))
        #expect(try bypasses(table, writer) && bypasses(table, reader) && bypasses(table, readWriter))
        #expect(try !bypasses(table, otherFile))
        // A bypassing read-write handle still writes past the cache: readers keep bypassing.
        _ = table.remove(writer)
        #expect(try bypasses(table, table.add(file(10, writable: false))))
        _ = table.remove(readWriter)
        #expect(try !bypasses(table, table.add(file(10, writable: false))))
    }

    @Test func aWriterAfterACachedHandleUsesTheCacheUntilThatHandleCloses() throws {
        let table = HandleTable()
        let reader = table.add(file(10, writable: false))
        let writer = table.add(file(10, writable: true), writeOnly: true)
        #expect(try !bypasses(table, reader) && !bypasses(table, writer))
        _ = table.remove(reader)
        _ = table.remove(writer)
        #expect(try bypasses(table, table.add(file(10, writable: true), writeOnly: true)))
    }

    @Test func aReadWriteHandleAloneUsesTheCache() throws {
        let table = HandleTable()
        #expect(try !bypasses(table, table.add(file(10, writable: true))))
        #expect(try !bypasses(table, table.add(file(10, writable: true), writeOnly: true)))
    }
}
