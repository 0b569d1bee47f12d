import Foundation
import Testing

/// `cachefs verify` and keys: an encrypted store is checked only with its key, from the same
/// sources as a mount; a plaintext store takes none.
@Suite struct EncryptedVerifyTests {
    @Test func anEncryptedStoreIsVerifiedWithItsKeyOnly() throws {
        try withEncryptedMountedStore(arguments: ["--pool", "data=0"]) { mount in
            _ = try mount.mustSucceed("""
                head -c 20000 /dev/urandom > data/f && echo small > data/g && : > data/empty
                dd if=/dev/urandom of=data/sparse bs=4096 seek=10 count=1 status=none
                """)
            #expect(try mount.unmount() == 0)

            let keyless = try Shell.run([MountedStore.executable, "verify", mount.store])
            #expect(keyless.status == 2)
            #expect(keyless.output.isEmpty, "\(keyless.output)")
            let lines = keyless.error.split(separator: "\n")
            #expect(lines.count == 1 && keyless.error.contains("is an encrypted store: verify needs its key"), "\(keyless.error)")

            for extra in [[], ["--deep"]] {
                let verified = try mount.verify(extra)
                #expect(verified.succeeded && verified.output.contains("clean: 4 files checked"), "\(extra): \(verified.output)")
            }

            let credentials = mount.directory + "/credentials"
            try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: false)
            try FileManager.default.copyItem(atPath: mount.keyFile, toPath: credentials + "/cachefs.key")
            let fromCredential = try Shell.run(["env", "CREDENTIALS_DIRECTORY=\(credentials)", MountedStore.executable,
                                                "verify", mount.store, "--deep"])
            #expect(fromCredential.succeeded && fromCredential.output.contains("clean: 4 files checked"),
                    "\(fromCredential.output) \(fromCredential.error)")

            let other = mount.directory + "/other.key"
            #expect(try Shell.run([MountedStore.executable, "keygen", other]).succeeded)
            let wrong = try Shell.run([MountedStore.executable, "verify", mount.store, "--key-file", other])
            #expect(wrong.status == 2 && wrong.error.contains("wrong key"), "\(wrong.error)")
        }
    }

    @Test func aPlaintextStoreTakesNoKey() throws {
        try withMountedStore(arguments: ["--pool", "data=0"]) { mount in
            _ = try mount.mustSucceed("echo plain > data/f")
            #expect(try mount.unmount() == 0)
            let key = mount.directory + "/store.key"
            #expect(try Shell.run([MountedStore.executable, "keygen", key]).succeeded)
            let keyed = try Shell.run([MountedStore.executable, "verify", mount.store, "--key-file", key])
            #expect(keyed.status == 2 && keyed.error.contains("is a plaintext store: it takes no key"), "\(keyed.error)")
            let plain = try Shell.run([MountedStore.executable, "verify", mount.store, "--deep"])
            #expect(plain.succeeded && plain.output.contains("clean: 1 files checked"), "\(plain.output)")
        }
    }
}
