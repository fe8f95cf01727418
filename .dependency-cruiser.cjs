/** Import rules (npm run lint): the direction of dependencies a newcomer can rely on. */
module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      severity: 'error',
      comment:
        'Modules that import each other cannot be understood or tested alone. A type-only import back counts too: a domain module names what it uses (its own interface, or a Pick of the service types), never the services bag that builds it.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-folder-cycles',
      severity: 'error',
      comment:
        'The folders of a service depend one way: two folders that import each other (users → admin → users) are one knot a newcomer has to learn whole. ' +
        'Type-only imports count here too. A side effect every area needs (an event, an audit row) goes in a neutral folder (events/), not in the area that shows it. ' +
        'A subfolder may use its parent folder (agents/proxy → agents/registry.ts): the parent counts its subfolders as its own.',
      scope: 'folder',
      from: { path: '^server/(account|agent)/' },
      to: { circular: true },
    },
    {
      name: 'contracts-stand-alone',
      severity: 'error',
      comment: 'contracts/ is what both sides of a boundary share: it imports no service, client or bridge code.',
      from: { path: '^contracts/' },
      to: { path: '^(server|client|rest-bridge)/', pathNot: '^server/(account|agent)/router[.]ts$' },
    },
    {
      name: 'contracts-router-types-only',
      severity: 'error',
      comment: "A service's router type is inferred from its router: contracts names it as a type, never as a value.",
      from: { path: '^contracts/' },
      to: { path: '^server/(account|agent)/router[.]ts$', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'account-sees-agent-contracts-only',
      severity: 'error',
      comment: "The account service talks to agents through contracts/agent (schemas, AgentRouter), never the agent's internals.",
      from: { path: '^server/account/' },
      to: { path: '^server/agent/' },
    },
    {
      name: 'client-sees-contracts-only',
      severity: 'error',
      comment: 'The clients (web, SDK) run elsewhere: of this repository they import only contracts/ and their own code.',
      from: { path: '^client/' },
      to: { path: '^(server|rest-bridge|scripts)/' },
    },
    {
      name: 'common-is-shared',
      severity: 'error',
      comment: 'server/common is the shared toolbox: it knows neither service.',
      from: { path: '^server/common/' },
      to: { path: '^(server/(account|agent)|rest-bridge)/' },
    },
    {
      name: 'bridge-is-generic',
      severity: 'error',
      comment:
        'rest-bridge/ is REST-to-tRPC machinery (JSON, SSE, multipart, files, OpenAPI): each service declares its own route table with it, so it imports neither service.',
      from: { path: '^rest-bridge/' },
      to: { path: '^server/(account|agent)/' },
    },
    {
      name: 'agent-knows-no-account',
      severity: 'error',
      comment: 'An agent runs on its own VM: it never imports the account service.',
      from: { path: '^server/agent/' },
      to: { path: '^server/account/' },
    },
    {
      name: 'server-not-client',
      severity: 'error',
      comment: 'The services never import the web client.',
      from: { path: '^(server|rest-bridge)/' },
      to: { path: '^client/' },
    },
    {
      name: 'production-not-tests',
      severity: 'error',
      comment: 'Production code never imports tests, benchmarks or scripts.',
      from: { path: '^(server|rest-bridge|client)/' },
      to: { path: '^(test|e2e|bench|scripts)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|dist|server/generated|client/web/dist)' },
    tsConfig: { fileName: 'tsconfig.json' },
    // Type-only imports count for the boundaries (a client naming a server type is still coupled to it) and for cycles.
    tsPreCompilationDeps: true,
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
