@testable import FuseAdapter
import Testing

/// `MountFailure.explain`: the one line a refused kernel mount becomes, from what libfuse and
/// fusermount3 wrote. (FuseAdapter has no test target of its own; this is pure logic.)
@Suite struct MountFailureExplainTests {
    /// fusermount3's refusal of a mountpoint the user cannot write names that rule, not /dev/fuse.
    @Test func aMountpointTheUserCannotWriteGetsAdviceAboutTheMountpoint() {
        let line = MountFailure.explain("fusermount3: user has no write access to mountpoint /srv/mnt\n",
                                        mountpoint: "/srv/mnt")
        #expect(line == "cannot mount on /srv/mnt: user has no write access to mountpoint /srv/mnt; "
            + "a user who is not root may mount only on a directory they can write to (and own, if it is sticky); "
            + "mount on a directory of your own (mkdir ~/cache), or as root")
        #expect(!line.contains("/dev/fuse"), "\(line)")
    }

    @Test func aStickyMountpointOfAnotherUserGetsTheSameAdvice() {
        let line = MountFailure.explain("fusermount3: mountpoint /tmp/x not owned by user\n", mountpoint: "/tmp/x")
        #expect(line.hasPrefix("cannot mount on /tmp/x: mountpoint /tmp/x not owned by user; a user who is not root"), "\(line)")
        #expect(!line.contains("/dev/fuse"), "\(line)")
    }

    /// The causes that were explained before keep their advice.
    @Test func theOtherCausesKeepTheirAdvice() {
        let denied = MountFailure.explain("fuse: failed to open /dev/fuse: Permission denied\n", mountpoint: "/m")
        #expect(denied.contains("this user may not open /dev/fuse"), "\(denied)")
        let allowOther = MountFailure.explain("fusermount3: option allow_other only allowed if 'user_allow_other' is set in /etc/fuse.conf\n",
                                              mountpoint: "/m")
        #expect(allowOther.contains("needs a line 'user_allow_other'"), "\(allowOther)")
        let refused = MountFailure.explain("fuse: mount failed: Invalid argument\n", mountpoint: "/m")
        #expect(refused == "cannot mount on /m: mount failed: Invalid argument; check that /dev/fuse is the FUSE device "
            + "(ls -l /dev/fuse shows 'c' and 10, 229) and that the fuse module is loaded")
    }
}
