#include <cuda_fp16.h>
#define LANES 3
struct Inner { char tag; double value; };
typedef struct { short s; unsigned char b; } Small;
struct __align__(16) Params {
 public:
  const float* x;
  char flag;
  int counts[LANES], more;
  Inner inner;
  Small small[2];
  alignas(8) float aligned;
  __half h;
  static constexpr int kTile = 4;
  __device__ float twice() const { return 2 * aligned; }
 private:
  float4 v;
};
extern "C" __global__ void k(Params p, Inner i, Small s, int2 q, __half2 w) {}
