@testable import CacheCore
import CacheModel
@testable import CacheNames
import Foundation
import Synchronization
import Testing

/// A large directory read from the index goes into memory in holds of a bounded number of
/// names, so a request never waits behind the whole install; until the last part it is not
/// loaded for anyone, and it has one loader at a time.
@Suite struct LargeDirectoryInstallTests {
    @Test func aDirectoryInstallsInBoundedPartsAndIsLoadedOnlyAfterTheLast() throws {
        let perHold = Tunables.installNamesPerHold
        let count = 2 * perHold + 17
        let source = SyntheticDirectory(directory: 1, files: count)
        var pages = DirectoryPages(1, ownEntry: source.ownEntry, from: source, pageSize: count + 1)
        let load = try #require(try pages.next())
        #expect(load.isFirst && load.isLast, "one page holds the whole directory")
        var state = NamespaceState()
        var parts: [Int] = []
        var position: Int? = 0
        while let start = position {
            position = state.install(load, from: start)
            if let next = position {
                parts.append(next - start)
                #expect(!state.isLoaded(1), "half a directory is not loaded for anyone")
                #expect(throws: NamespaceMiss.self) { try state.child(of: 1, named: Data("f0".utf8)) }
                if parts.count == 1 {
                    // A change by id between parts: memory is the truth once an entry is in it.
                    state.modify(source.firstChild) { $0.record.size = 4242 }
                }
            }
        }
        #expect(parts == [perHold, perHold], "each hold but the last installs \(perHold) names")
        #expect(state.isLoaded(1))
        #expect(try state.child(of: 1, named: Data("f\(count - 1)".utf8))?.entryID == source.firstChild + Int64(count) - 1)
        #expect(try state.child(of: 1, named: Data("f0".utf8))?.size == 4242, "the change between parts is kept")
        let listed = try state.children(of: 1, after: ListingCursor(id: 0, namesListed: 0), limit: .max)
        #expect(listed.count == count)
        #expect(listed.map(\.record.entryID) == listed.map(\.record.entryID).sorted())
        #expect(state.install(load, from: 0) == nil, "a loaded directory is not installed twice")
    }

    /// A source that can count a directory's rows lets its load make room for all of them on
    /// the first page: the id table is not rebuilt again as the pages arrive. One that
    /// cannot (nil) leaves the tables to grow as before.
    @Test(arguments: [true, false])
    func aLoadThatKnowsItsSizeMakesRoomOnce(reportsCount: Bool) throws {
        let count = 5 * 1_000 + 7
        let source = SyntheticDirectory(directory: 1, files: count, reportsCount: reportsCount)
        var pages = DirectoryPages(1, ownEntry: source.ownEntry, from: source, pageSize: 1_000)
        var state = NamespaceState()
        var expected: [Int?] = []
        var idTableBytes: [Int] = []
        while let load = try pages.next() {
            expected.append(load.expectedNames)
            var position: Int? = 0
            while let start = position { position = state.install(load, from: start) }
            idTableBytes.append(state.inodes.idTableBytes)
        }
        #expect(expected == [reportsCount ? count : nil] + Array(repeating: nil, count: 5))
        #expect(state.isLoaded(1))
        #expect(state.inodes.count == count + 1)
        if reportsCount {
            #expect(Set(idTableBytes).count == 1, "the id table kept its first size: \(idTableBytes)")
            #expect(idTableBytes[0] <= (count + 1) * 4 * 4 / 3 + 16, "at a load near 3/4")
        } else {
            #expect(Set(idTableBytes).count > 1, "the id table grew as pages came: \(idTableBytes)")
        }
        let listed = try state.children(of: 1, after: ListingCursor(id: 0, namesListed: 0), limit: .max)
        #expect(listed.count == count)
        #expect(try state.child(of: 1, named: Data("f\(count - 1)".utf8))?.entryID == source.firstChild + Int64(count) - 1)
    }

    /// A directory of one page is counted by that page.
    @Test func aOnePageLoadCountsItsOwnRows() throws {
        let source = SyntheticDirectory(directory: 1, files: 10)
        var pages = DirectoryPages(1, ownEntry: source.ownEntry, from: source, pageSize: 1_000)
        #expect(try pages.next()?.expectedNames == 10)
    }

    /// A large directory is read in pages and each page installed in its holds: the rows held
    /// at once are one page's, and the directory is loaded only after the last page.
    @Test func aDirectoryLoadsPageByPageAndIsLoadedOnlyAfterTheLastPage() throws {
        let count = 3 * 1_000 + 7
        let source = SyntheticDirectory(directory: 1, files: count)
        var pages = DirectoryPages(1, ownEntry: source.ownEntry, from: source, pageSize: 1_000)
        var state = NamespaceState()
        var pageSizes: [Int] = []
        while let load = try pages.next() {
            pageSizes.append(load.names.count)
            var position: Int? = 0
            while let start = position { position = state.install(load, from: start) }
            if !load.isLast {
                #expect(state.isInstalling(1) && !state.isLoaded(1), "a directory is not loaded between pages")
                if pageSizes.count == 1 { state.modify(source.firstChild) { $0.record.size = 4242 } }
            }
        }
        #expect(pageSizes == [1_000, 1_000, 1_000, 7])
        #expect(state.isLoaded(1) && !state.isInstalling(1))
        let listed = try state.children(of: 1, after: ListingCursor(id: 0, namesListed: 0), limit: .max)
        #expect(listed.map(\.record.entryID) == (0..<count).map { source.firstChild + Int64($0) })
        #expect(try state.child(of: 1, named: Data("f0".utf8))?.size == 4242, "a change between pages is kept")
    }

    /// A page that cannot be read ends the load: the directory stays unloaded, and the next
    /// load reads it whole.
    @Test func aLoadThatFailsBetweenPagesLeavesTheDirectoryToTheNextLoad() throws {
        let count = 2_500
        let failing = SyntheticDirectory(directory: 1, files: count, failingAfterPages: 1)
        var pages = DirectoryPages(1, ownEntry: failing.ownEntry, from: failing, pageSize: 1_000)
        var state = NamespaceState()
        let first = try #require(try pages.next())
        var position: Int? = 0
        while let start = position { position = state.install(first, from: start) }
        #expect(throws: CacheError.self) { try pages.next() }
        state.abandonInstall(of: 1)
        #expect(!state.isLoaded(1) && !state.isInstalling(1))

        let source = SyntheticDirectory(directory: 1, files: count)
        var again = DirectoryPages(1, ownEntry: source.ownEntry, from: source, pageSize: 1_000)
        while let load = try again.next() {
            position = 0
            while let start = position { position = state.install(load, from: start) }
        }
        #expect(state.isLoaded(1))
        let listed = try state.children(of: 1, after: ListingCursor(id: 0, namesListed: 0), limit: .max)
        #expect(listed.count == count)
    }

    /// Several requests reach a large directory after a remount at once: one reads it from
    /// the index and installs it, the others wait for that install, and each finds its name.
    @Test func requestsThatNeedADirectoryBeingLoadedWaitForItsOneLoader() throws {
        let store = try TestStore()
        let files = Tunables.installNamesPerHold * 2 + 5
        let big: EntryID
        do {
            let engine = try store.open()
            defer { engine.shutdown() }
            big = try engine.mkdir(parent: try engine.pool("data"), name: Array("big".utf8), mode: 0o755,
                                   caller: tester).id
            for number in 0..<files {
                _ = try engine.writeFile("f\(number)", in: big, content: [])
            }
            engine.waitForIndex()
        }
        let reads = ChildReads()
        let engine = try store.open(directorySource: { reads.counting($0) })
        defer { engine.shutdown() }
        _ = try engine.lookup(parent: try engine.pool("data"), name: Array("big".utf8))
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { request in
            let name = "f\(request * (files / 8))"
            do {
                _ = try engine.lookup(parent: big, name: Array(name.utf8))
            } catch {
                failures.withLock { $0.append("\(name): \(error)") }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "every request finds its name")
        #expect(reads.reads(of: big) == 1, "one loader read the directory; \(reads.reads(of: big)) reads")
    }
}

/// A directory of `files` entries, each named `fN`, as the index would hand it over.
private final class SyntheticDirectory: DirectorySource {
    let directory: EntryID
    let files: Int
    var firstChild: EntryID { directory + 1 }

    /// Whether ``childCount(of:)`` answers (the index does) or says it cannot tell.
    let reportsCount: Bool

    init(directory: EntryID, files: Int, failingAfterPages: Int? = nil, reportsCount: Bool = false) {
        self.directory = directory
        self.files = files
        self.failingAfterPages = failingAfterPages
        self.reportsCount = reportsCount
    }

    func childCount(of parent: EntryID) throws -> Int? {
        reportsCount && parent == directory ? files : nil
    }

    var ownEntry: EntryRecord { Self.record(id: directory, parent: nil, name: "", kind: .directory) }

    func entry(_ id: EntryID) throws -> EntryRecord? { nil }

    /// Fails the read of every page after this many, when set.
    let failingAfterPages: Int?
    let pagesRead = Mutex(0)

    func children(of parent: EntryID, after: EntryID, limit: Int) throws -> ChildPage {
        guard parent == directory else { return ChildPage(rows: [], lastRead: nil, isFull: false) }
        let read = pagesRead.withLock { count in
            defer { count += 1 }
            return count
        }
        if let failingAfterPages, read >= failingAfterPages { throw CacheError.io(EIO) }
        let first = Int(max(after - firstChild + 1, 0))
        let numbers = first..<min(first + limit, files)
        let rows = numbers.map {
            Self.record(id: firstChild + Int64($0), parent: directory, name: "f\($0)", kind: .file)
        }
        return ChildPage(rows: rows, lastRead: rows.last?.entryID, isFull: rows.count == limit)
    }

    func allLinks(in parent: EntryID) throws -> [(name: Data, record: EntryRecord)] { [] }

    func links(of entry: EntryID) throws -> [LinkName] { [] }

    static func record(id: EntryID, parent: EntryID?, name: String, kind: EntryKind) -> EntryRecord {
        EntryRecord(id: id, parent: parent, name: Data(name.utf8), pool: 1, kind: kind, mode: 0o644, uid: 0, gid: 0,
                    size: 0, atime: 0, mtime: 0, ctime: 0, lastAccess: 0, persistent: false, pinnedUntil: 0,
                    expiration: 0, writing: false, durable: true)
    }
}

/// The real index, counting how many times each directory's children are read.
private final class ChildReads: Sendable {
    private let counts = Mutex<[EntryID: Int]>([:])

    func reads(of directory: EntryID) -> Int { counts.withLock { $0[directory, default: 0] } }

    func counting(_ index: IndexDatabase) -> any DirectorySource { Source(index: index, reads: self) }

    private struct Source: DirectorySource {
        let index: IndexDatabase
        let reads: ChildReads

        func entry(_ id: EntryID) throws -> EntryRecord? { try index.entry(id) }

        func children(of parent: EntryID, after: EntryID, limit: Int) throws -> ChildPage {
            // A read of the directory starts at its first page.
            if after == 0 { reads.counts.withLock { $0[parent, default: 0] += 1 } }
            return try index.children(of: parent, after: after, limit: limit)
        }

        func allLinks(in parent: EntryID) throws -> [(name: Data, record: EntryRecord)] {
            try index.allLinks(in: parent)
        }

        func links(of entry: EntryID) throws -> [LinkName] { try index.links(of: entry) }
    }
}
