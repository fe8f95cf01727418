import { chatRouter } from './chat/router.js';
import { filesRouter } from './files/router.js';
import { healthRouter } from './health/router.js';
import { router } from './trpc.js';

export const agentRouter = router({
  health: healthRouter,
  chat: chatRouter,
  files: filesRouter,
});

export type AgentRouter = typeof agentRouter;
