// Shared by the fused losses (loss.wgsl, policy_loss.wgsl), whose Params end their offsets with
// offRows: under ROWS, logits row r belongs to token tokenRows[offRows + r] (an LM head run on a
// loss's rows alone, binding 6 in both); otherwise each row is its own token. `#include token_rows`.
#if ROWS
@group(0) @binding(6) var<storage, read> tokenRows: array<u32>;
fn tokenOf(row: u32) -> u32 { return tokenRows[p.offRows + row]; }
#else
fn tokenOf(row: u32) -> u32 { return row; }
#endif
