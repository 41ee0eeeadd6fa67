/** The options of `npm run gpu-kit` (scripts/gpu-kit.mjs), declared where the tests can check them. */
import type { CliDescription, OptionSpecs } from '../src/cli/options';

/** Dawn's binaries the webgpu package ships, by platform. */
export const KIT_PLATFORMS = ['linux-x64', 'linux-arm64', 'darwin-universal', 'win32-x64', 'win32-arm64'] as const;

const options = {
  out: { type: 'string', arg: 'DIR', help: 'the folder to write (replaced if it exists); required' },
  platform: { type: 'string', choices: [...KIT_PLATFORMS], default: 'linux-x64', help: "Dawn's binary for this platform" },
  'with-node': { type: 'flag', help: 'include this Node binary (xz) for a machine without Node' },
  debs: { type: 'string', arg: 'DIR', help: "Debian packages (.deb) to unpack where the machine has no Vulkan loader (libvulkan1)" },
} as const satisfies OptionSpecs;

export const gpuKitCli: CliDescription<typeof options> = {
  name: 'gpu-kit',
  summary: 'Bundle the GPU report (bench/node/gpu.ts) and its PyTorch peers into a folder that runs with Node and a GPU driver alone.',
  options,
};
