/**
 * A promise the test opens when it chooses (Node 20 has no `Promise.withResolvers`): a request, an
 * answer or a model's reply waits on `opened` until the other side of a race has moved.
 */
export interface Gate {
  opened: Promise<void>;
  open(): void;
}

export function gate(): Gate {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}
