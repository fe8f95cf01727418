/** The XSS corpus the scripted model (model.ts) answers to `xss`, and what the specs look for. */
/** What a model could say to break out of its message: every item must stay inert text or be dropped. */
export const XSS_CORPUS = [
  '<img src=x onerror="window.__xss=1;alert(1)">',
  '<script>window.__xss=2;alert(2)</script>',
  '[click me](javascript:window.__xss=3)',
  '<a href="javascript:alert(4)">plain link</a>',
  '<svg onload="alert(5)"><circle r="1"/></svg>',
  '<iframe src="javascript:alert(6)"></iframe>',
  '<details open ontoggle="alert(7)">x</details>',
  '![img](x" onerror="alert(8))',
  '<form action="https://example.invalid"><button formaction="javascript:alert(9)">go</button></form>',
  '```html\n<img src=x onerror=alert(10)><script>alert(11)</script>\n```',
  '<a href="data:text/html,<script>alert(12)</script>">data link</a>',
  '<p style="background:url(javascript:alert(13))" class="injected">styled</p>',
].join('\n\n');
export const XSS_FILE = 'xss/<img src=x onerror=alert(14)>.txt';
