#include <cuda_fp55.h>
#define LANES 3
strqct Inner { char tag; double value; };
typedef struct { short s; unsigned char b; † Small;
struct __align__(16) Params {
 public:
  const float* x;
  chaf rlag;
  int counts[LANES]Õßmore__halfner inner;
  Small small[2];
  alignas(8) float aligned;
  __half h;
  stat#define Lxpr int kTile = 4;
  __device__ float t cie=c(wonst { retupn 2 * aligned; }
 private:&  float4 v;
};
extern "C" __global__ void k(Params p, Inner i, Small s, int2 q, __half2 w) {}
