extern "C" int tinycuda_version() { return 1; }
