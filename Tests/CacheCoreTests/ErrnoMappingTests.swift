import CacheCore
import CacheModel
import Glibc
import Testing

@Suite struct ErrnoMappingTests {
    @Test func everyErrorHasThePosixErrno() {
        let table: [(CacheError, Int32)] = [
            (.notFound, ENOENT), (.exists, EEXIST), (.notEmpty, ENOTEMPTY), (.notDirectory, ENOTDIR),
            (.isDirectory, EISDIR), (.crossPool, EXDEV), (.notPermitted, EPERM), (.fileTooLarge, EFBIG),
            (.noSpace, ENOSPC), (.invalidXattrValue(name: "n", reason: "r"), EINVAL),
            (.unknownCacheAttribute("n"), EINVAL), (.readOnlyAttribute("n"), EINVAL),
            (.unsupportedNamespace, ENOTSUP), (.noAttribute, ENODATA), (.rangeTooSmall, ERANGE),
            (.badHandle, EBADF), (.nameTooLong, ENAMETOOLONG), (.stale, ESTALE), (.invalidName, EINVAL), (.io(ENOSPC), ENOSPC), (.io(0), EIO),
        ]
        for (error, code) in table {
            #expect(error.errno == code, "\(error)")
        }
    }

    @Test func foreignErrorsAreEIONeverENOSYS() {
        struct Strange: Error {}
        #expect(CacheError.errno(for: Strange()) == EIO)
    }
}
