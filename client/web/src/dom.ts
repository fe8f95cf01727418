/** Tiny DOM helper: h('button', {type: 'button', onclick}, 'Text'). */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Partial<Omit<HTMLElementTagNameMap[K], 'style'>> & Record<string, unknown> = {},
  ...children: Array<Node | string>
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (name.startsWith('data-') || name.startsWith('aria-') || name === 'role' || name === 'for') el.setAttribute(name, String(value));
    else (el as unknown as Record<string, unknown>)[name] = value;
  }
  el.append(...children);
  return el;
}

/** Shows a failure where screen readers announce it. */
export function alertBox(): { el: HTMLElement; show(message: string): void; clear(): void } {
  const el = h('p', { role: 'alert' });
  return {
    el,
    show: (message) => (el.textContent = message),
    clear: () => (el.textContent = ''),
  };
}
