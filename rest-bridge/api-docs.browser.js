// The API reference page's start-up (served by rest-bridge/api-docs.ts as docs/start.js): a file
// rather than an inline script, so that the page's CSP can refuse every inline script.
// SwaggerUIBundle is the global of docs/swagger-ui-bundle.js, loaded just before.
(() => {
  const root = document.getElementById('swagger-ui');
  const form = document.getElementById('token-form');
  const specUrl = new URL(root.dataset.spec, location.href).href;
  let token = '';

  // The token goes to this origin only, never to a server the document names.
  const withToken = (request) => {
    if (token && new URL(request.url, location.href).origin === location.origin) request.headers.Authorization = `Bearer ${token}`;
    return request;
  };

  async function load() {
    const answer = await fetch(specUrl, { headers: token ? { Authorization: `Bearer ${token}` } : {} });
    // An agent's document needs its secret: ask for it rather than show a failure.
    form.hidden = answer.status !== 401;
    if (answer.status === 401) return;
    if (!answer.ok) {
      root.textContent = `The OpenAPI document (${specUrl}) answered ${answer.status}.`;
      return;
    }
    // validatorUrl null: Swagger UI would otherwise send the document to validator.swagger.io.
    window.SwaggerUIBundle({ spec: await answer.json(), dom_id: '#swagger-ui', validatorUrl: null, deepLinking: true, requestInterceptor: withToken });
  }

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    token = String(new FormData(form).get('token') ?? '');
    void load();
  });
  void load();
})();
