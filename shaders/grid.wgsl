// Shared by kernels dispatched on src/gpu/ops/common.ts grid(): the workgroups of a 1-D
// range are folded into 2-D past the 65535-per-dimension limit. `#include grid`.

// Index of this invocation in the range, for workgroups `width` invocations wide (width 1
// and lid 0 give the workgroup's own index, for kernels with one workgroup per row).
fn gridIndex(wid: vec3<u32>, nwg: vec3<u32>, lid: vec3<u32>, width: u32) -> u32 {
  return (wid.y * nwg.x + wid.x) * width + lid.x;
}
