import Foundation
import Glibc

/// `renameat2(RENAME_EXCHANGE)`: two names of one pool swap what they name, atomically.
extension CacheEngine {
    func exchange(_ first: LinkName, _ second: LinkName) throws {
        try namespace.withLock { namespace in
            let firstParent = try directory(first.parent, in: &namespace)
            let secondParent = try directory(second.parent, in: &namespace)
            guard let firstID = try namespace.childID(of: first.parent, named: first.name),
                  let secondID = try namespace.childID(of: second.parent, named: second.name)
            else { throw CacheError.notFound }
            guard firstID != secondID else { return }
            let firstRecord = try namespace.record(firstID)
            let secondRecord = try namespace.record(secondID)
            guard !firstRecord.isPool, !secondRecord.isPool else { throw CacheError.notPermitted }
            guard firstParent.pool == secondParent.pool else { throw CacheError.crossPool }
            // A directory may not end up inside itself.
            if firstRecord.kind == .directory { try refuseMoveIntoItself(firstID, destination: second.parent, in: &namespace) }
            if secondRecord.kind == .directory { try refuseMoveIntoItself(secondID, destination: first.parent, in: &namespace) }
            let time = now.nanoseconds
            namespace.exchange(first, of: firstID, with: second, of: secondID, at: time)
            let firstIsDirectory = firstRecord.kind == .directory
            let secondIsDirectory = secondRecord.kind == .directory
            // Each parent loses the subdirectory it gave and gains the one it got.
            let firstParentChange = (secondIsDirectory ? 1 : 0) - (firstIsDirectory ? 1 : 0)
            if first.parent == second.parent {
                touch(first.parent, at: time, in: &namespace)
            } else {
                touch(first.parent, at: time, in: &namespace, subdirectories: firstParentChange)
                touch(second.parent, at: time, in: &namespace, subdirectories: -firstParentChange)
            }
        }
    }
}
