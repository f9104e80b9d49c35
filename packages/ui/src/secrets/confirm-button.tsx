import type { JSX } from 'preact';
import { useState } from 'preact/hooks';

/** A destructive button that asks once more, in the page (keyboard-usable, no `window.confirm`). */
export function ConfirmButton({
  label,
  question,
  onConfirm,
  disabled,
}: {
  label: string;
  question: string;
  onConfirm: () => void;
  disabled?: boolean;
}): JSX.Element {
  const [asking, setAsking] = useState(false);
  if (!asking) {
    return (
      <button type="button" class="danger" disabled={disabled} onClick={() => setAsking(true)}>
        {label}
      </button>
    );
  }
  return (
    <fieldset class="plain confirm" aria-label={question}>
      <span>{question}</span>
      <button
        type="button"
        class="danger"
        ref={(button) => button?.focus()}
        onClick={() => {
          setAsking(false);
          onConfirm();
        }}
      >
        Confirm
      </button>
      <button type="button" class="secondary" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </fieldset>
  );
}
