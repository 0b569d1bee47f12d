"""The encryption section's figures of the cipher alone: `cachefs cipher-speed` (the CPU
of sealing and opening file blocks, per MiB, at several block sizes) and whether AES
instructions are there and used."""
import re
import shutil

from .core import FAIL, read_lines, warn

BLOCK_SIZES = (4096, 16384, 65536)
# BoringSSL's AES-GCM code that runs on AES instructions (AES-NI, VAES) is named so;
# its fallbacks are aes_nohw_* and vpaes_* (SSSE3 shuffles, no AES instructions).
HARDWARE_SYMBOLS = re.compile(r"aes_hw|aesni|vaes")
SOFTWARE_SYMBOLS = re.compile(r"aes_nohw|vpaes")


def cipher_costs(b, mebibytes=64):
    """{block size: (seal µs per MiB, open µs per MiB)}, FAIL for each on failure."""
    out = f"{b.work}/cipher-speed.out"
    cmd = [b.cachefs, "cipher-speed", "--mebibytes", mebibytes]
    for size in BLOCK_SIZES:
        cmd += ["--block-size", size]
    costs = {size: (FAIL, FAIL) for size in BLOCK_SIZES}
    if b.steps.run(out, cmd) != 0:
        warn("cachefs cipher-speed failed")
        return costs
    for line in read_lines(out):
        fields = line.split()
        if len(fields) == 3 and fields[0].isdigit() and int(fields[0]) in costs:
            costs[int(fields[0])] = (float(fields[1]), float(fields[2]))
    return costs


def cpu_has_aes():
    """The `aes` flag of /proc/cpuinfo."""
    for line in read_lines("/proc/cpuinfo"):
        if line.startswith("flags") and "aes" in line.split(":", 1)[-1].split():
            return True
    return False


def aes_use(b):
    """"yes / used": the CPU's flag, then whether BoringSSL (built into cachefs by
    swift-crypto) ran its AES-instruction code, from the symbols of a perf profile of
    `cachefs cipher-speed`. Without perf: "assumed" when the flag is there (x86_64
    BoringSSL picks that code from CPUID by itself)."""
    flag = "yes" if cpu_has_aes() else "no"
    if not shutil.which("perf"):
        return f"{flag} / {'assumed' if flag == 'yes' else 'not used'} (no perf)"
    data, report = f"{b.work}/cipher.perf", f"{b.work}/cipher-perf.out"
    if b.steps.run(None, ["perf", "record", "-q", "-o", data, "--", b.cachefs, "cipher-speed", "--mebibytes", 16],
                   stderr="stdout") != 0 or \
            b.steps.run(report, ["perf", "report", "-i", data, "--stdio", "--sort", "symbol", "-q"]) != 0:
        warn("perf of cachefs cipher-speed failed")
        return f"{flag} / ?"
    symbols = "\n".join(read_lines(report))
    if HARDWARE_SYMBOLS.search(symbols):
        return f"{flag} / used"
    if SOFTWARE_SYMBOLS.search(symbols):
        return f"{flag} / not used"
    return f"{flag} / ?"
