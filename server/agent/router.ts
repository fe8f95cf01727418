import { chatRouter, chatsRouter } from './chat/router.js';
import { filesRouter } from './files/router.js';
import { healthRouter } from './health/router.js';
import { memoryRouter } from './memory/router.js';
import { pendingRouter } from './pending/router.js';
import { subagentsRouter } from './subagents/router.js';
import { tasksRouter } from './tasks/router.js';
import { messengerRouter, telegramRouter } from './messenger/router.js';
import { router } from './trpc.js';

export const agentRouter = router({
  health: healthRouter,
  chat: chatRouter,
  chats: chatsRouter,
  files: filesRouter,
  subagents: subagentsRouter,
  pending: pendingRouter,
  tasks: tasksRouter,
  memory: memoryRouter,
  // The same procedures under the generic name and the integration's (docs/api.md: messenger paths).
  messenger: messengerRouter,
  telegram: telegramRouter,
});

export type AgentRouter = typeof agentRouter;
