// hopper.cuh -- the raw Hopper (sm_90a) instructions the CUDA C++ twins are built of, each
// wrapped once in inline PTX so the kernels read like the Gluon ones. One header per kind:
//
//   ptx/smem.cuh      shared-memory addresses, st.shared, stmatrix
//   ptx/mbarrier.cuh  mbarrier init / arrive / arrive.expect_tx / try_wait.parity
//   ptx/tma.cuh       cp.async.bulk.tensor loads and stores, their fences; host: tensor maps
//   ptx/wgmma.cuh     wgmma fence / commit / wait, shared-memory descriptors, the three shapes
//   ptx/sync.cuh      setmaxnreg, named barriers
//   ptx/schedule.cuh  reg_fence, schedule_fence: what the compiler must not move
//   ptx/math.cuh      cvt to two halves, ex2.approx
//
// Every wrapper is a single instruction (or a spin loop around one). Nothing here hides a
// choice a kernel makes: ring depth, roles, parities and who arrives where stay in the kernels
// and in ring.cuh.
#pragma once

#include "ptx/math.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/schedule.cuh"
#include "ptx/smem.cuh"
#include "ptx/sync.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"
