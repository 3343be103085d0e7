// The shop's page script: wires the wallet widgets' callbacks to the shop's backend, and shows
// every widget event in the side panel (window.shopEvents keeps them for inspection).

window.shopEvents = [];
const main = document.querySelector('main');
const amount = Number(main.dataset.amount);
const reference = main.dataset.reference;
const money = (c) => `$${(c / 100).toFixed(2)}`;

function log(name, detail) {
  window.shopEvents.push({ name, detail });
  const li = document.createElement('li');
  const b = document.createElement('b');
  b.textContent = name;
  li.append(b);
  if (detail !== undefined) {
    const code = document.createElement('code');
    code.textContent = JSON.stringify(detail);
    li.append(' ', code);
  }
  document.getElementById('events').prepend(li);
}

// One total, the order's, as the pay widget shows it; the balance toggle only says how much of
// it the wallet balance covers. Once paid, the total is what was paid.
function totals(applied, paid) {
  document.getElementById('subtotal').textContent = money(amount);
  document.getElementById('applied-line').hidden = applied === 0 || paid !== undefined;
  document.getElementById('applied').textContent = money(applied);
  document.getElementById('total-label').textContent = paid === undefined ? 'Total' : 'Paid';
  document.getElementById('total').textContent = money(paid ?? amount);
}
totals(0);

document.addEventListener('ServicePay::Ready', (event) => {
  log('ServicePay::Ready', event.detail);
  const sp = window.servicePay;

  sp.onApplyBalanceToggle((p) => {
    log('onApplyBalanceToggle', p);
    totals(p.applied ? p.appliedAmount : 0);
  });
  sp.onGoToWallet(() => log('onGoToWallet'));
  sp.onGetUserData(async () => {
    const user = await (await fetch('/api/me')).json();
    log('onGetUserData', user);
    return user;
  });
  sp.onPaymentIntentStart(async (start) => {
    log('onPaymentIntentStart', start);
    const res = await fetch('/api/checkout', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ reference: start.reference }),
    });
    const out = await res.json();
    if (!res.ok) throw new Error(out.error || 'Checkout failed');
    log('checkout', out);
    return out;
  });
  sp.onPaymentIntentUpdate((intent) => {
    log('onPaymentIntentUpdate', { id: intent.id, status: intent.attributes.status });
    if (intent.attributes.status !== 'PromotedToPayment') return;
    document.getElementById('paid').hidden = false;
    document.getElementById('pay-area').hidden = true;
    totals(0, intent.attributes.amount);
    const success = document.createElement('service-pay');
    success.setAttribute('widget', 'wallet-payment-success');
    success.setAttribute('amount', String(amount));
    success.setAttribute('reference', reference);
    document.getElementById('success-slot').replaceChildren(success);
  });
});

// Payloads live 15 minutes: fetch a fresh one from the backend before that.
setInterval(
  async () => {
    const { payload } = await (await fetch('/api/widget-payload')).json();
    window.servicePay?.setWalletWidgetData(payload);
  },
  10 * 60 * 1000,
);
