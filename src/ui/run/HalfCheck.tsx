/** A checkbox that keeps a tensor in f16 or f32 (the base's weights, the KV cache), with why in its title. */
export function HalfCheck({ label, title, half, disabled, onChange, testId }: { label: string; title: string; half: boolean; disabled: boolean; onChange: (dtype: 'f16' | 'f32') => void; testId: string }) {
  return (
    <label className="check" title={title}>
      <input type="checkbox" checked={half} disabled={disabled} onChange={(e) => onChange(e.target.checked ? 'f16' : 'f32')} data-testid={testId} /> {label}
    </label>
  );
}
