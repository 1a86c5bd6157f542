// throw.cc — N calls of cudaSetDevice, then an uncaught C++ exception (std::terminate, abort).
#include <cuda_runtime_api.h>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 100;
  for (long i = 0; i < n; i++) cudaSetDevice((int)i);
  printf("done %ld\n", n);
  fflush(stdout);
  throw std::runtime_error("uncaught on purpose");
}
