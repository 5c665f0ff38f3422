__global__ void segment_kernel(float *x) { x[threadIdx.x] += 1.0f; }
