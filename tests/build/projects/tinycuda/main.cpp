#include <cstdio>
extern "C" int tinycuda_version();
int main() { std::printf("tinycuda %d\n", tinycuda_version()); return 0; }
