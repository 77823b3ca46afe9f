"""``python -m mf_adapter.launch_ascend_mf_store``: serves memfabric's config store at
``$ASCEND_MF_STORE_URL`` (``tcp://<ip>:<port>``) until SIGINT or SIGTERM, for transfer engines
and Big Memory / Share Memory jobs started with the store elsewhere. ``ASCEND_MF_LOG_LEVEL``
(0 debug .. 3 error) sets the log level. Exits with the store's code if it cannot be served.
"""

import os
import signal
import sys

from . import create_config_store, set_log_level


def main():
    level = os.environ.get("ASCEND_MF_LOG_LEVEL", "")
    if level.isdigit():
        set_log_level(int(level))
    url = os.environ.get("ASCEND_MF_STORE_URL")
    if not url:
        raise ValueError("ASCEND_MF_STORE_URL is not set: it names the store's address, "
                         "e.g. tcp://127.0.0.1:6000")
    # Blocked before the store starts its threads, which inherit the mask: the signals wait for
    # sigwait below instead of ending the process in one of them.
    signals = {signal.SIGINT, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    rc = create_config_store(url)
    if rc != 0:
        from memfabric_hybrid import get_last_err_msg

        print(f"launch_ascend_mf_store: create_config_store({url!r}) returned {rc}: "
              f"{get_last_err_msg()}", file=sys.stderr)
        sys.exit(rc)
    print(f"launch_ascend_mf_store: serving the config store at {url}", flush=True)
    signal.sigwait(signals)


if __name__ == "__main__":
    main()
