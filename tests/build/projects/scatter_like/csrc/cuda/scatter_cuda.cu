__global__ void scatter_kernel(float *x) { x[threadIdx.x] += 1.0f; }
