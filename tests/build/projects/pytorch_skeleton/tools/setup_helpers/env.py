# Skeleton of tools/setup_helpers/env.py: PyTorch reads build switches from the environment.
import os


def check_env_flag(name: str, default: str = "") -> bool:
    return os.getenv(name, default).upper() in ["ON", "1", "YES", "TRUE", "Y"]


BUILD_DIR = "build"
USE_MKLDNN = check_env_flag("USE_MKLDNN")
