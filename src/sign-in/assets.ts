import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'

/**
 * The pages' only style and scripts, served from this origin (the CSP allows 'self' and nothing
 * inline). They are small enough to live here as text, so the build ships them with the code.
 */

export const STYLESHEET = `:root{color-scheme:light dark;--bg:#f4f6fb;--card:#fff;--text:#1c2333;--muted:#5b6578;--line:#dde2ec;--accent:#2f5bea;--accent-text:#fff;--error-bg:#fdecec;--error:#a1231d;--info-bg:#e9f0ff;--info:#1f3f9e}
@media (prefers-color-scheme:dark){:root{--bg:#10141c;--card:#1a202b;--text:#e6e9f0;--muted:#9aa4b6;--line:#2c3442;--accent:#6d8dff;--accent-text:#0c1020;--error-bg:#3a1b1b;--error:#ffb4ab;--info-bg:#1c2744;--info:#b8c8ff}}
*{box-sizing:border-box}
html,body{margin:0}
body{min-height:100vh;display:flex;flex-direction:column;align-items:center;justify-content:center;padding:24px 16px;background:var(--bg);color:var(--text);font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
.card{width:100%;max-width:420px;background:var(--card);border:1px solid var(--line);border-radius:14px;padding:32px 32px 28px;box-shadow:0 12px 32px rgba(20,30,60,.08)}
.card.wide{max-width:560px}
.brand{display:flex;align-items:center;gap:10px;font-weight:600;color:var(--muted);font-size:15px;margin-bottom:20px;overflow-wrap:anywhere}
.logo{width:28px;height:28px;flex:none}
h1{font-size:24px;line-height:1.25;margin:0 0 16px}
h2{font-size:16px;margin:24px 0 8px}
.lead{margin:0 0 16px;color:var(--muted)}
.lead strong{color:var(--text)}
.stack{display:flex;flex-direction:column;gap:6px}
label{font-weight:600;font-size:14px;margin-top:8px}
input[type=text],input[type=password],input[type=number]{width:100%;padding:10px 12px;font:inherit;color:var(--text);background:var(--card);border:1px solid var(--line);border-radius:8px}
input:focus-visible,button:focus-visible,a:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
button{font:inherit;cursor:pointer;border-radius:8px;padding:10px 16px}
.primary{margin-top:16px;border:0;background:var(--accent);color:var(--accent-text);font-weight:600}
.primary:hover{filter:brightness(1.08)}
.secondary{width:100%;border:1px solid var(--line);background:transparent;color:var(--text);font-weight:600}
.secondary:hover{border-color:var(--accent)}
.link{border:0;background:none;padding:0;color:var(--accent);text-decoration:underline}
.danger{color:var(--error)}
.divider{display:flex;align-items:center;gap:12px;color:var(--muted);font-size:13px;margin:20px 0 12px}
.divider::before,.divider::after{content:"";flex:1;border-top:1px solid var(--line)}
.notice{padding:10px 12px;border-radius:8px;margin:0 0 12px;font-size:15px}
.error{background:var(--error-bg);color:var(--error)}
.info{background:var(--info-bg);color:var(--info)}
.list{list-style:none;margin:0;padding:0;border:1px solid var(--line);border-radius:10px}
.list li{display:flex;flex-wrap:wrap;align-items:center;gap:4px 8px;padding:10px 12px;border-top:1px solid var(--line)}
.list li .inline{margin-left:auto}
#passkeys .what{flex:1 1 auto;min-width:0}
.list li:first-child{border-top:0}
.what{font-weight:600;overflow-wrap:anywhere}
.meta{color:var(--muted);font-size:13px;flex-basis:100%}
.badge{font-size:12px;padding:1px 8px;border-radius:99px;background:var(--info-bg);color:var(--info)}
.inline{margin:0}
#passkey-register{margin-top:12px}
#passkey-register .secondary{margin-top:8px}
.signout{margin-top:24px}
section{border-top:1px solid var(--line);margin-top:24px}
section h2{margin-top:20px}
.toc{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:14px;margin:0 0 8px}
.hint{color:var(--muted);font-size:13px;margin:2px 0}
.row{margin-top:10px}
#key-create{margin-top:12px}
.stack .secondary{margin-top:10px}
.danger-border{border-color:var(--error)}
.badge.on{background:#e3f6e8;color:#17612e}
code{font:14px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;overflow-wrap:anywhere}
textarea.secret{display:block;width:100%;resize:none;padding:10px 12px;color:var(--text);background:var(--card);border:1px solid var(--line);border-radius:8px;word-break:break-all}
.secret{font:15px/1.5 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;letter-spacing:.03em}
#totp-secret{display:inline-block;padding:2px 6px;border-radius:6px;background:var(--info-bg);color:var(--info)}
.steps{padding-left:20px}
.steps>li{margin-bottom:16px}
.qr-box{margin:8px 0}
.qr{display:block;max-width:100%;height:auto;border:1px solid var(--line);border-radius:8px}
.codes{columns:2;padding-left:24px;margin:8px 0}
.signout .primary{width:100%}
.aside{margin:16px 0 0;font-size:14px}
a{color:var(--accent)}
.foot{margin-top:16px;color:var(--muted);font-size:12px}
.user-code{font:600 28px/1.3 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;letter-spacing:.14em;text-align:center;margin:4px 0 16px}
input.user-code{margin:0;padding:8px 12px;font-size:22px;text-transform:uppercase}
[hidden]{display:none!important}
`

/** The pages' icon and /favicon.ico: a key on the accent colour, drawn in SVG (no raster file to ship). */
export const ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="#2f5bea"/><stop offset="1" stop-color="#7c4dff"/></linearGradient></defs><rect width="32" height="32" rx="8" fill="url(#g)"/><circle cx="12" cy="14" r="5" fill="none" stroke="#fff" stroke-width="2.5"/><path d="M16 17l9 9m-3-3l2.5-2.5m-5-1.5l2-2" fill="none" stroke="#fff" stroke-width="2.5" stroke-linecap="round"/></svg>
`

/**
 * The passkey buttons: shown only when the browser can use passkeys; each asks the service for
 * options, hands them to the browser (@simplewebauthn/browser, served beside this file), and
 * sends the answer back. Failures show in the page's notice; the password form never needs this.
 */
export const CLIENT_SCRIPT = `'use strict';
(function () {
  var lib = window.SimpleWebAuthnBrowser;
  if (!lib || !lib.browserSupportsWebAuthn()) return;
  function show (text) {
    var notice = document.getElementById('notice');
    if (!notice) {
      notice = document.createElement('p');
      notice.id = 'notice';
      notice.setAttribute('role', 'alert');
      var heading = document.querySelector('h1');
      heading.parentNode.insertBefore(notice, heading.nextSibling);
    }
    notice.className = 'notice error';
    notice.textContent = text;
  }
  async function post (url, body) {
    var response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), credentials: 'same-origin' });
    var answer = await response.json().catch(function () { return {}; });
    return { ok: response.ok, answer: answer };
  }
  var signin = document.getElementById('passkey-signin');
  if (signin) {
    signin.hidden = false;
    var button = document.getElementById('passkey-button');
    button.addEventListener('click', async function () {
      button.disabled = true;
      try {
        var options = await post('/auth/signin/passkey/options', {});
        if (!options.ok) throw new Error(options.answer.detail || 'The passkey sign-in could not start.');
        var assertion = await lib.startAuthentication({ optionsJSON: options.answer.options });
        var result = await post('/auth/signin/passkey', { response: assertion, rd: button.getAttribute('data-rd') || undefined });
        if (!result.ok) throw new Error(result.answer.status === 429 ? 'Too many attempts. Try again later.' : 'That passkey did not sign you in.');
        window.location.assign(result.answer.redirect);
      } catch (error) {
        show(error && error.name === 'NotAllowedError' ? 'The passkey sign-in was cancelled.' : (error && error.message) || 'The passkey sign-in failed.');
      } finally {
        button.disabled = false;
      }
    });
  }
  var register = document.getElementById('passkey-register');
  if (register) {
    var add = document.getElementById('register-button');
    var password = document.getElementById('passkey-password');
    // The form is the script's: it asks for the options with the password, never posts itself.
    register.addEventListener('submit', async function (event) {
      event.preventDefault();
      add.disabled = true;
      try {
        var options = await post('/auth/passkeys/options', { current_password: password.value });
        password.value = '';
        if (!options.ok) {
          throw new Error(options.answer.status === 701 ? 'That password is not right.'
            : options.answer.status === 429 ? 'Too many attempts. Try again later.' : 'The passkey could not be added.');
        }
        var attestation = await lib.startRegistration({ optionsJSON: options.answer.options });
        var result = await post('/auth/passkeys', { response: attestation });
        if (!result.ok) throw new Error('The passkey could not be added.');
        window.location.assign('/auth/signin');
      } catch (error) {
        show(error && error.name === 'NotAllowedError' ? 'Adding the passkey was cancelled.' : (error && error.message) || 'The passkey could not be added.');
      } finally {
        add.disabled = false;
      }
    });
    register.hidden = false;
  }
})();
`

/** @simplewebauthn/browser's own bundle (a UMD file that defines `SimpleWebAuthnBrowser`), read once. */
export function webauthnBrowserBundle (): string {
  const entry = createRequire(import.meta.url).resolve('@simplewebauthn/browser')
  // The package's CommonJS entry is script/index.js; its bundle sits in dist/bundle/ beside it.
  return readFileSync(join(dirname(entry), '..', 'dist', 'bundle', 'index.umd.min.js'), 'utf8')
}
