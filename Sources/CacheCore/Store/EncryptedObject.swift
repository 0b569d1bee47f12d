import CacheModel
import Synchronization

/// One object file of an encrypted store while the daemon has it open, shared by all its
/// descriptors: whose bytes these are and, once known, the cipher of its header. Changes of
/// its bytes run one at a time inside ``withLock(_:)``: two writers (the kernel's writeback
/// threads, a fetch) would otherwise both reseal the same last block from its old version.
final class EncryptedObject: Sendable {
    let owner: EntryID
    private let sealing: Mutex<ObjectSealing>

    init(owner: EntryID) {
        self.owner = owner
        sealing = Mutex(ObjectSealing(owner: owner))
    }

    func withLock<T, E: Error>(_ body: (inout ObjectSealing) throws(E) -> T) throws(E) -> T {
        try sealing.withLock { (state: inout ObjectSealing) throws(E) -> T in try body(&state) }
    }

    /// The cipher as it is now, for a read that runs without the lock (and retries with it).
    var cipher: FileCipher? { sealing.withLock { $0.cipher } }
}

/// The state of an ``EncryptedObject`` reachable only inside its lock: holding an
/// `inout ObjectSealing` is holding the lock, so every byte change takes one.
///
/// An object file stored empty (0 bytes) has no header yet and reads as an empty file; the
/// first change that gives it bytes writes the header, with the owner of the path it was
/// opened at. Why lazily: a spare (``SpareByteFiles``) is emptied to 0 bytes under its old
/// entry's name and opened only after its rename to the new entry's name, so a header
/// written at open binds the right owner and a spare never holds old plaintext, nor an old
/// header. The price: an object cut to 0 bytes reads as empty; the index still says its
/// size, and `verify` reports the difference.
struct ObjectSealing {
    let owner: EntryID
    private(set) var cipher: FileCipher?
    private var headerChecked = false

    init(owner: EntryID) {
        self.owner = owner
    }

    /// Reads the header the first time a descriptor of the file opens.
    mutating func loadHeader(_ fd: Int32, encryption: StoreEncryption, disk: any Disk) throws(EncryptionError) {
        guard !headerChecked else { return }
        let stored: Int64
        do {
            stored = try disk.size(of: fd)
        } catch {
            throw .from(error, "stat an encrypted file")
        }
        if stored > 0 {
            cipher = try EncryptedFile.open(fd: fd, owner: owner, encryption: encryption, disk: disk).cipher
        }
        headerChecked = true
    }

    /// The file through `fd`, its header written first if it has none.
    mutating func sealedFile(_ fd: Int32, encryption: StoreEncryption, disk: any Disk) throws(EncryptionError)
        -> EncryptedFile
    {
        if let cipher { return EncryptedFile(fd: fd, cipher: cipher, disk: disk) }
        let file = try EncryptedFile.create(fd: fd, owner: owner, encryption: encryption, disk: disk)
        cipher = file.cipher
        return file
    }

    /// The file is cut to 0 stored bytes: it has no header until its next change.
    mutating func emptied() {
        cipher = nil
        headerChecked = true
    }
}

/// The object files open through an ``EncryptingDisk``: each descriptor's ``EncryptedObject``,
/// one per entry however many descriptors share it.
final class OpenObjects: Sendable {
    private struct State {
        var byDescriptor: [Int32: EncryptedObject] = [:]
        var byOwner: [EntryID: (object: EncryptedObject, descriptors: Int)] = [:]
    }

    private let state = Mutex(State())

    func add(_ fd: Int32, owner: EntryID) -> EncryptedObject {
        state.withLock { state in
            let shared = state.byOwner[owner] ?? (EncryptedObject(owner: owner), 0)
            state.byOwner[owner] = (shared.object, shared.descriptors + 1)
            state.byDescriptor[fd] = shared.object
            return shared.object
        }
    }

    func object(of fd: Int32) -> EncryptedObject? {
        state.withLock { $0.byDescriptor[fd] }
    }

    func remove(_ fd: Int32) {
        state.withLock { state in
            guard let object = state.byDescriptor.removeValue(forKey: fd),
                  let shared = state.byOwner[object.owner] else { return }
            state.byOwner[object.owner] = shared.descriptors > 1 ? (shared.object, shared.descriptors - 1) : nil
        }
    }
}
