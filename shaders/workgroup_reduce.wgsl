// Shared by the cooperative (workgroup-per-row) kernels; `#include workgroup_reduce`.
// The including module defines `const SCRATCH: u32`, at least its largest workgroup size.

var<workgroup> scratch: array<f32, SCRATCH>;

// -FLT_MAX: the identity of max (WGSL has no infinity literal).
const LOWEST = bitcast<f32>(0xff7fffffu);

// Sum (or max) of v over the first `size` invocations of the workgroup (a power of two),
// returned to every one of them; scratch is free for the next call on return.
fn workgroupReduce(lid: u32, size: u32, v: f32, isMax: bool) -> f32 {
  scratch[lid] = v;
  for (var stride = size / 2u; stride > 0u; stride /= 2u) {
    workgroupBarrier();
    if (lid < stride) {
      let a = scratch[lid];
      let b = scratch[lid + stride];
      scratch[lid] = select(a + b, max(a, b), isMax);
    }
  }
  workgroupBarrier();
  let r = scratch[0];
  workgroupBarrier();
  return r;
}
