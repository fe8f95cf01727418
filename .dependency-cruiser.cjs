/** Import rules (npm run lint): the direction of dependencies a newcomer can rely on. */
module.exports = {
  forbidden: [
    { name: 'no-cycles', severity: 'error', comment: 'Modules that import each other cannot be understood or tested alone.', from: {}, to: { circular: true } },
    {
      name: 'common-is-shared',
      severity: 'error',
      comment: 'server/common is the shared toolbox: it knows neither service.',
      from: { path: '^server/common/' },
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
    // Type-only imports (a domain module naming the services' type) are erased at runtime: only real imports count.
    tsPreCompilationDeps: false,
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
