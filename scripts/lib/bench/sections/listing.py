"""Workload 5: `ls -l` and `find` of a big directory."""
from .. import measure


def define(b):
    d = b.results.define
    b.results.define_section("listings", "mount", "direct")
    d("ls", f"ls -l of {b.opts.nls} files", "s", "time", "0.25")
    d("find", f"find of {b.opts.nls} files", "s", "time")


def run_listing(b):
    """Each listing must print NLS + 1 lines (the "total" line of ls -l, or DIR
    itself for find), or it is wrong."""
    for side in ("mount", "direct"):
        directory = f"{b.side_dir(side)}/many"
        b.results.record("ls", side, measure.listing(b, directory, ["ls", "-l"], b.opts.nls + 1))
        b.results.record("find", side, measure.listing(b, directory, ["find"], b.opts.nls + 1))
    b.results.progress("ls")
    b.results.progress("find")
