// The agent from its sources (`tsx server/agent/main.ts`); production runs the bundle (boot.ts).
// The V8 settings first, and the agent itself through import(): they must hold while it loads.
import './process-tuning.js';

const { runAgent } = await import('./run.js');
await runAgent();
