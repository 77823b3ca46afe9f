"""mf_adapter: memfabric's transfer-engine package (SGLang's ``from mf_adapter import
TransferEngine``), the same engine as ``memfabric_hybrid.TransferEngine``.

``python -m mf_adapter.launch_ascend_mf_store`` serves the config store at
``$ASCEND_MF_STORE_URL`` until SIGINT or SIGTERM.
"""

from memfabric_hybrid._transfer import (  # noqa: F401  (re-exported)
    TransDataOpType,
    TransferEngine,
    TransferOpcode,
    create_config_store,
    set_conf_store_tls,
    set_log_level,
)

__all__ = ["TransferEngine", "set_log_level", "create_config_store", "set_conf_store_tls"]
