// Reads server-sent events with npm's EventSource, as a browser would:
//   node read_events.mjs URL EVENT COUNT
// prints "EVENT DATA" for each of the first COUNT events named EVENT, then closes.
// Exits 1 on an error (a wrong content type, a refused connection) or after 30 s.
import { EventSource } from "eventsource";

const [url, name, count] = process.argv.slice(2);
let seen = 0;
const source = new EventSource(url);
const give_up = setTimeout(() => {
  console.error(`timed out after ${seen} events`);
  process.exit(1);
}, 30000);
source.addEventListener(name, (event) => {
  console.log(`${name} ${event.data}`);
  if (++seen >= Number(count)) {
    source.close();
    clearTimeout(give_up);
  }
});
source.onerror = (error) => {
  console.error(`EventSource error: ${error.message ?? error.type}`);
  source.close();
  clearTimeout(give_up);
  process.exit(1);
};
