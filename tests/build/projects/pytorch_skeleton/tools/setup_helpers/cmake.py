# Skeleton of tools/setup_helpers/cmake.py. The real one runs CMake configure only when
# build/CMakeCache.txt does not exist yet (the stale-cache trap), and forwards every
# environment variable whose name starts with BUILD_, USE_ or CMAKE_ to CMake as -D.
import os


def forwarded(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(("BUILD_", "USE_", "CMAKE_"))}


def needs_configure(build_dir: str) -> bool:
    return not os.path.exists(os.path.join(build_dir, "CMakeCache.txt"))
