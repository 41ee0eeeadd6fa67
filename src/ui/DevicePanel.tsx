import { useShallow } from 'zustand/react/shallow';
import { pick, useLab } from './store';

const LIMITS_SHOWN: [string, string][] = [
  ['maxBufferSize', 'Max buffer'],
  ['maxStorageBufferBindingSize', 'Max storage binding'],
  ['maxComputeWorkgroupStorageSize', 'Workgroup storage'],
  ['maxComputeInvocationsPerWorkgroup', 'Invocations / workgroup'],
  ['maxComputeWorkgroupsPerDimension', 'Workgroups / dimension'],
];

function bytes(n: number): string {
  if (n >= 2 ** 30) return `${(n / 2 ** 30).toFixed(n % 2 ** 30 ? 1 : 0)} GiB`;
  if (n >= 2 ** 20) return `${(n / 2 ** 20).toFixed(0)} MiB`;
  if (n >= 2 ** 10) return `${(n / 2 ** 10).toFixed(0)} KiB`;
  return `${n} B`;
}

export function DevicePanel() {
  const { device, deviceStatus, deviceError } = useLab(useShallow((s) => pick(s, ['device', 'deviceStatus', 'deviceError'])));
  if (deviceStatus === 'error') {
    return (
      <section className="panel error" data-testid="no-webgpu">
        <h2>WebGPU is not available</h2>
        <p>{deviceError}</p>
        <p>
          SAGE Lab trains and samples its models on the GPU through WebGPU. Open it in Chrome or Edge 113 or newer. On
          Linux, start Chrome with <code>--enable-unsafe-webgpu --enable-features=Vulkan</code>; on a machine without a
          GPU add <code>--use-webgpu-adapter=swiftshader --enable-unsafe-swiftshader</code> (slow, but complete).
        </p>
      </section>
    );
  }
  if (!device) {
    return (
      <section className="panel">
        <h2>GPU</h2>
        <p className="muted">Connecting to the GPU…</p>
      </section>
    );
  }
  const { adapter } = device;
  return (
    <section className="panel" data-testid="device">
      <h2>GPU</h2>
      <dl className="facts">
        <dt>Adapter</dt>
        <dd data-testid="adapter">
          {[adapter.vendor, adapter.architecture].filter(Boolean).join(' · ') || 'unknown'}
          {adapter.description ? <span className="muted"> — {adapter.description}</span> : null}
        </dd>
        <dt>Engine</dt>
        <dd>{device.platform}</dd>
        <dt>Features</dt>
        <dd className="chips">
          {device.features.map((f) => (
            <span key={f.name} className={f.granted ? 'chip on' : 'chip off'} data-testid={`feature-${f.name}`}>
              {f.granted ? '✓' : '✗'} {f.name}
            </span>
          ))}
        </dd>
        <dt>Subgroup size</dt>
        <dd data-testid="subgroup-size">
          {device.subgroupSize ?? 'varies or none'}
          {device.subgroupMatmul ? <span className="muted"> (matmuls share row loads across subgroups)</span> : null}
        </dd>
        <dt>Matrix units</dt>
        <dd data-testid="subgroup-matrix">
          {device.subgroupMatrix ? (
            <>
              {device.subgroupMatrix} f16 blocks <span className="muted">(f16 products may run on them where the tuner finds it faster)</span>
            </>
          ) : (
            <span className="muted">none offered (Chrome offers them with --enable-unsafe-webgpu where the GPU has them)</span>
          )}
        </dd>
        {LIMITS_SHOWN.map(([key, label]) => (
          <div key={key} className="row">
            <dt>{label}</dt>
            <dd>{key.endsWith('Size') ? bytes(device.limits[key] ?? 0) : (device.limits[key] ?? 0).toLocaleString()}</dd>
          </div>
        ))}
      </dl>
    </section>
  );
}
