import { StepPlot } from './chart/StepPlot';
import type { PlotSeries } from './chart/plotData';

interface Props {
  data: readonly { step: number; loss: number }[];
  testId: string;
}

const SERIES: PlotSeries[] = [{ key: 'loss', color: '#34d399', width: 2 }];

/** Loss per optimizer step, redrawn as steps arrive. */
export function LossChart({ data, testId }: Props) {
  return (
    <div className="chart" data-testid={testId}>
      <StepPlot rows={data} series={SERIES} xLabel="optimizer step" left={{ label: 'loss (nats/token)', min: 0 }} format={(v) => v.toFixed(4)} height={240} />
    </div>
  );
}
