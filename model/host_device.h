// Marks small math functions that both backends share: compiled for the host by g++ and for the
// device by nvcc, so the CPU and GPU evaluate literally the same formula.
#pragma once
#ifdef __CUDACC__
#define DS_HOST_DEVICE __host__ __device__
#else
#define DS_HOST_DEVICE
#endif
