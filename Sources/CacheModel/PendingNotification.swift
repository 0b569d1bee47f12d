/// A change the kernel must hear about.
package enum PendingNotification: Sendable {
    /// A name cachefs removed.
    case deleted(parent: EntryID, child: EntryID, name: [UInt8])
    /// A name whose entry the kernel must look up again (when it expires or is revalidated moved).
    case lookUpAgain(parent: EntryID, name: [UInt8])
}
