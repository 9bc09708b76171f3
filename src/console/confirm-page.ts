import { html, type Markup } from '../sign-in/index.js'

/**
 * The confirm step of a destructive action: a page of its own that says what will happen and
 * posts the same action again with `confirm=yes`. The action does nothing without it, so a
 * stray click (or a form on another page of this origin) never ends anything by itself.
 */

export const CONFIRMED = 'yes'

export interface Confirmation {
  /** What is asked, as the heading: "End this session?" */
  question: string
  /** What it does, in a sentence. */
  consequence: string
  /** The action's path (posted to with confirm=yes). */
  action: string
  /** The button's words: "End the session". */
  button: string
  /** Where "Cancel" goes back to. */
  cancel: string
}

export function confirmBody (confirmation: Confirmation): Markup {
  return html`<section class="confirm" aria-labelledby="confirm-question">
<h2 id="confirm-question">${confirmation.question}</h2>
<p class="lead" id="consequence">${confirmation.consequence}</p>
<form method="post" action="${confirmation.action}" class="row-actions">
<input type="hidden" name="confirm" value="${CONFIRMED}">
<button type="submit" class="primary danger-button" id="confirm-button" autofocus>${confirmation.button}</button>
<a href="${confirmation.cancel}" class="button-link" id="cancel">Cancel</a>
</form>
</section>`
}
