import { CartesianGrid, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';

interface Props {
  data: readonly { step: number; loss: number }[];
  testId: string;
}

/** Loss per optimizer step, redrawn as steps arrive. */
export function LossChart({ data, testId }: Props) {
  return (
    <div className="chart" data-testid={testId}>
      <ResponsiveContainer width="100%" height={240}>
        <LineChart data={data as { step: number; loss: number }[]} margin={{ top: 8, right: 24, bottom: 20, left: 8 }}>
          <CartesianGrid stroke="#2a3642" strokeDasharray="3 3" />
          <XAxis
            dataKey="step"
            type="number"
            domain={['dataMin', 'dataMax']}
            allowDecimals={false}
            stroke="#8b98a5"
            label={{ value: 'optimizer step', position: 'insideBottom', offset: -10, fill: '#8b98a5' }}
          />
          <YAxis
            stroke="#8b98a5"
            domain={[0, 'auto']}
            label={{ value: 'loss (nats/token)', angle: -90, position: 'insideLeft', fill: '#8b98a5', dy: 50 }}
          />
          <Tooltip contentStyle={{ background: '#182028', border: '1px solid #2a3642' }} formatter={(v) => Number(v).toFixed(4)} />
          <Line type="linear" dataKey="loss" stroke="#34d399" strokeWidth={2} dot={false} isAnimationActive={false} />
        </LineChart>
      </ResponsiveContainer>
    </div>
  );
}
