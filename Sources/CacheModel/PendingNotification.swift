/// A change the kernel must hear about.
package enum PendingNotification: Sendable {
    /// A name cachefs removed.
    case deleted(parent: EntryID, child: EntryID, name: [UInt8])
}
