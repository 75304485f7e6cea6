"""spark-submit entry point: ``spark-submit jobs/compute_dirty.py --old ... --new ... --out ...``.

Takes the flags of ``dirtiness run``; the master and resources come from
spark-submit, everything else from conf/job.yaml and the flags.
"""

import sys

from dirtiness.cli import entry

if __name__ == "__main__":
    entry(["run", *sys.argv[1:]], set_master=False)
