import { prng } from "../../prng.js";
import { loadSqlite } from "./sqlite-wasm.js";

/**
 * "Today" for the sample company: orders run up to the day before, so "last month" is
 * October 2026 and answers stay the same whenever the data is generated.
 */
export const SALES_ANCHOR_DATE = "2026-11-01";
/** First month with orders (18 months before the anchor). */
export const SALES_FIRST_MONTH = "2025-05";
/** Seed of the generator: the same seed gives the same database, byte for byte in content. */
export const DEFAULT_SALES_SEED = 20261101;

/**
 * The designed story of October 2026, for tests and the bundled reports: three large West
 * accounts got year-end volume deals at 30–36% off (policy caps discounts at 15% without VP
 * approval), and the supplier of the Networking category raised unit costs by 11% from
 * 1 October while list prices stayed put.
 */
export const OCTOBER_2026_STORY = {
  discountedCustomers: ["Helios Freight Group", "Cobalt Ridge Hospitals", "Juniper Street Markets"],
  region: "West",
  costIncreaseCategory: "Networking",
  costIncrease: 0.11,
} as const;

/** The schema the model is told about; kept next to the DDL so they cannot drift apart. */
export const SALES_SCHEMA_DESCRIPTION = [
  "regions(region_id, name, manager)",
  "customers(customer_id, name, segment ['Enterprise'|'Mid-Market'|'SMB'], region_id, created_on)",
  "products(product_id, sku, name, category, unit_cost, list_price)",
  "orders(order_id, customer_id, region_id, order_date 'YYYY-MM-DD', channel ['Direct'|'Online'|'Partner'], sales_rep)",
  "order_lines(line_id, order_id, product_id, quantity, unit_price, unit_cost, discount [fraction 0..1])",
  "view sales(line_id, order_id, order_date, month 'YYYY-MM', customer_id, customer, segment, region, product, " +
    "category, quantity, discount, revenue, cost, gross_profit, discount_amount)",
  "revenue = quantity*unit_price*(1-discount); cost = quantity*unit_cost; gross margin = gross_profit/revenue",
].join("\n");

const DDL = `
CREATE TABLE regions (region_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, manager TEXT NOT NULL);
CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, segment TEXT NOT NULL,
  region_id INTEGER NOT NULL REFERENCES regions, created_on TEXT NOT NULL);
CREATE TABLE products (product_id INTEGER PRIMARY KEY, sku TEXT NOT NULL UNIQUE, name TEXT NOT NULL, category TEXT NOT NULL,
  unit_cost REAL NOT NULL, list_price REAL NOT NULL);
CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers,
  region_id INTEGER NOT NULL REFERENCES regions, order_date TEXT NOT NULL, channel TEXT NOT NULL, sales_rep TEXT NOT NULL);
CREATE TABLE order_lines (line_id INTEGER PRIMARY KEY, order_id INTEGER NOT NULL REFERENCES orders,
  product_id INTEGER NOT NULL REFERENCES products, quantity INTEGER NOT NULL, unit_price REAL NOT NULL,
  unit_cost REAL NOT NULL, discount REAL NOT NULL);
CREATE INDEX orders_date ON orders(order_date);
CREATE INDEX orders_customer ON orders(customer_id);
CREATE INDEX lines_order ON order_lines(order_id);
CREATE VIEW sales AS
SELECT l.line_id, o.order_id, o.order_date, substr(o.order_date, 1, 7) AS month,
  c.customer_id, c.name AS customer, c.segment, r.name AS region, p.name AS product, p.category,
  l.quantity, l.discount,
  round(l.quantity * l.unit_price * (1 - l.discount), 2) AS revenue,
  round(l.quantity * l.unit_cost, 2) AS cost,
  round(l.quantity * l.unit_price * (1 - l.discount) - l.quantity * l.unit_cost, 2) AS gross_profit,
  round(l.quantity * l.unit_price * l.discount, 2) AS discount_amount
FROM order_lines l JOIN orders o USING (order_id) JOIN customers c USING (customer_id)
  JOIN regions r ON r.region_id = o.region_id JOIN products p USING (product_id);
`;

const REGIONS = [
  { name: "North", manager: "Ingrid Solberg", reps: ["Ola Berg", "Mia Lund", "Tom Hale"] },
  { name: "South", manager: "Marcus Reyes", reps: ["Ana Cruz", "Leo Park", "Ruth Oduya"] },
  { name: "East", manager: "Priya Natarajan", reps: ["Sam Wu", "Ivy Chen", "Noah Grant"] },
  { name: "West", manager: "Daniel Okafor", reps: ["Kai Moreno", "Zoe Patel", "Eli Brooks"] },
  { name: "Central", manager: "Helen Fischer", reps: ["Max Wolf", "Ada King", "Ben Shaw"] },
] as const;

/** Category: price range, cost as a share of list price, product names. */
const CATEGORIES = [
  {
    name: "Hardware",
    price: [650, 2_200],
    costRatio: 0.8,
    items: ["Laptop 14", "Laptop 16 Pro", "Desktop Tower", "Mini PC", "Workstation", "Rugged Tablet", "Thin Client", "Docking Station"],
  },
  {
    name: "Displays",
    price: [140, 950],
    costRatio: 0.76,
    items: [
      "Monitor 24",
      "Monitor 27 QHD",
      "Monitor 32 4K",
      "Conference Display 55",
      "Portable Monitor",
      "Curved Monitor 34",
      "Touch Display 22",
      "Projector HD",
    ],
  },
  {
    name: "Networking",
    price: [90, 3_200],
    costRatio: 0.68,
    items: ["Switch 24-port", "Switch 48-port PoE", "Wi-Fi 7 Access Point", "Edge Router", "Firewall Appliance", "Mesh Kit", "SFP+ Module", "Rack Patch Panel"],
  },
  {
    name: "Software",
    price: [45, 620],
    costRatio: 0.3,
    items: [
      "Office Suite Seat",
      "Endpoint Security Seat",
      "Backup Cloud Seat",
      "Design Suite Seat",
      "Project Planner Seat",
      "Remote Desktop Seat",
      "Password Vault Seat",
      "Analytics Seat",
    ],
  },
  {
    name: "Accessories",
    price: [14, 160],
    costRatio: 0.55,
    items: ["Wireless Mouse", "Keyboard", "Headset", "Webcam 4K", "USB-C Hub", "Laptop Bag", "Privacy Filter", "Charger 100W", "Cable Kit"],
  },
  {
    name: "Supplies",
    price: [6, 85],
    costRatio: 0.66,
    items: ["Copy Paper Case", "Toner Black", "Toner Color Set", "Label Rolls", "Notebook Pack", "Pen Box", "Shredder Bags", "Whiteboard Markers"],
  },
  {
    name: "Services",
    price: [250, 5_200],
    costRatio: 0.5,
    items: [
      "Onsite Setup",
      "Managed Support Month",
      "Network Audit",
      "Device Imaging",
      "Training Day",
      "Extended Warranty",
      "Data Migration",
      "Recycling Pickup",
    ],
  },
] as const;

const NAME_A = [
  "Alder",
  "Birch",
  "Summit",
  "Harbor",
  "Granite",
  "Meadow",
  "Copper",
  "Silver",
  "Northgate",
  "Lakeside",
  "Redwood",
  "Falcon",
  "Orchard",
  "Beacon",
  "Prairie",
  "Riverton",
  "Oakmont",
  "Bluewater",
  "Sterling",
  "Westbrook",
  "Ironwood",
  "Maple",
  "Crescent",
  "Pinecrest",
];
const NAME_B = [
  "Dental",
  "Logistics",
  "Foods",
  "Legal",
  "Clinics",
  "Builders",
  "Schools",
  "Energy",
  "Realty",
  "Studios",
  "Motors",
  "Analytics",
  "Pharmacy",
  "Hotels",
  "Farms",
  "Insurance",
  "Labs",
  "Media",
  "Outfitters",
  "Partners",
];
const NAME_C = ["LLC", "Inc", "Group", "Co", "Ltd", "Associates"];

const SEGMENTS = [
  { name: "Enterprise", count: 36, weight: 6, qty: [4, 40], discount: [0.05, 0.12] },
  { name: "Mid-Market", count: 120, weight: 2, qty: [2, 14], discount: [0, 0.08] },
  { name: "SMB", count: 210, weight: 1, qty: [1, 5], discount: [0, 0.04] },
] as const;

const CHANNELS = ["Direct", "Online", "Partner"] as const;
const ORDERS_PER_MONTH = 1_000;

function monthsFrom(first: string, count: number): { year: number; month: number }[] {
  const [y, m] = first.split("-").map(Number) as [number, number];
  return Array.from({ length: count }, (_, i) => ({ year: y + Math.floor((m - 1 + i) / 12), month: ((m - 1 + i) % 12) + 1 }));
}

const pad = (n: number) => String(n).padStart(2, "0");
const money = (n: number) => Math.round(n * 100) / 100;

type Row = (string | number)[];
const TABLES = ["regions", "customers", "products", "orders", "order_lines"] as const;

/** The sample data, as rows in column order per table. Deterministic for a given seed. */
function generateSalesRows(seed: number): Record<(typeof TABLES)[number], Row[]> {
  const rand = prng(seed);
  const between = (lo: number, hi: number) => lo + rand() * (hi - lo);
  const int = (lo: number, hi: number) => Math.floor(between(lo, hi + 1));
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)] as T;

  const tables = { regions: [] as Row[], customers: [] as Row[], products: [] as Row[], orders: [] as Row[], order_lines: [] as Row[] };
  const inserter =
    (rows: Row[]) =>
    (...values: Row) =>
      void rows.push(values);
  const insertRegion = inserter(tables.regions);
  const insertCustomer = inserter(tables.customers);
  const insertProduct = inserter(tables.products);
  const insertOrder = inserter(tables.orders);
  const insertLine = inserter(tables.order_lines);

  REGIONS.forEach((r, i) => insertRegion(i + 1, r.name, r.manager));
  const westId = REGIONS.findIndex((r) => r.name === OCTOBER_2026_STORY.region) + 1;

  const products: { id: number; category: string; price: number; cost: number }[] = [];
  for (const [ci, category] of CATEGORIES.entries()) {
    for (const [pi, item] of category.items.entries()) {
      const id = products.length + 1;
      const price = money(between(category.price[0], category.price[1]));
      const cost = money(price * category.costRatio * between(0.95, 1.05));
      const current = category.name === OCTOBER_2026_STORY.costIncreaseCategory ? money(cost * (1 + OCTOBER_2026_STORY.costIncrease)) : cost;
      insertProduct(id, `${category.name.slice(0, 3).toUpperCase()}-${ci + 1}${pad(pi + 1)}`, item, category.name, current, price);
      products.push({ id, category: category.name, price, cost });
    }
  }

  type Customer = { id: number; segment: (typeof SEGMENTS)[number]; regionId: number; weight: number };
  const customers: Customer[] = [];
  const names = new Set<string>();
  const story = new Map<number, string>();
  for (const segment of SEGMENTS) {
    for (let i = 0; i < segment.count; i++) {
      let name = `${pick(NAME_A)} ${pick(NAME_B)} ${pick(NAME_C)}`;
      while (names.has(name)) name = `${pick(NAME_A)} ${pick(NAME_B)} ${pick(NAME_C)}`;
      let regionId = int(1, REGIONS.length);
      const storyIndex = segment.name === "Enterprise" ? i : -1;
      const storyName = OCTOBER_2026_STORY.discountedCustomers[storyIndex];
      if (storyName) {
        name = storyName;
        regionId = westId;
      }
      names.add(name);
      const id = customers.length + 1;
      if (storyName) story.set(id, storyName);
      insertCustomer(id, name, segment.name, regionId, `2024-${pad(int(1, 12))}-${pad(int(1, 28))}`);
      customers.push({ id, segment, regionId, weight: segment.weight * between(0.5, 1.5) });
    }
  }
  const totalWeight = customers.reduce((s, c) => s + c.weight, 0);
  const drawCustomer = () => {
    let x = rand() * totalWeight;
    for (const c of customers) {
      x -= c.weight;
      if (x <= 0) return c;
    }
    return customers[customers.length - 1] as Customer;
  };

  let orderId = 0;
  let lineId = 0;
  const addOrder = (customer: Customer, date: string, deal: boolean) => {
    orderId++;
    const region = REGIONS[customer.regionId - 1]!;
    insertOrder(orderId, customer.id, customer.regionId, date, deal ? "Direct" : pick(CHANNELS), pick(region.reps));
    const lines = deal ? int(3, 6) : int(1, 3);
    const costUp = date >= "2026-10-01";
    // Prices were raised 3% at the start of 2026; costs follow the product, and Networking's rose in October.
    const priceFactor = date >= "2026-01-01" ? 1.03 : 1;
    for (let l = 0; l < lines; l++) {
      const product = deal
        ? pick(products.filter((p) => p.category === "Hardware" || p.category === "Networking" || p.category === "Displays"))
        : pick(products);
      const quantity = deal ? int(20, 60) : int(customer.segment.qty[0], customer.segment.qty[1]);
      const discount = deal
        ? between(0.3, 0.36)
        : rand() < 0.4 && customer.segment.name !== "Enterprise"
          ? 0
          : between(customer.segment.discount[0], customer.segment.discount[1]);
      const cost = costUp && product.category === OCTOBER_2026_STORY.costIncreaseCategory ? product.cost * (1 + OCTOBER_2026_STORY.costIncrease) : product.cost;
      lineId++;
      insertLine(lineId, orderId, product.id, quantity, money(product.price * priceFactor), money(cost), Math.round(discount * 1000) / 1000);
    }
  };

  for (const [index, { year, month }] of monthsFrom(SALES_FIRST_MONTH, 18).entries()) {
    const days = new Date(Date.UTC(year, month, 0)).getUTCDate();
    const growth = 1 + index * 0.01;
    const season = month === 7 || month === 8 ? 0.85 : month === 3 || month === 9 || month === 10 ? 1.08 : 1;
    const count = Math.round(ORDERS_PER_MONTH * growth * season * between(0.97, 1.03));
    for (let i = 0; i < count; i++) {
      addOrder(drawCustomer(), `${year}-${pad(month)}-${pad(int(1, days))}`, false);
    }
    if (year === 2026 && month === 10) {
      for (const id of story.keys()) {
        const customer = customers[id - 1]!;
        for (let d = 0; d < 7; d++) addOrder(customer, `2026-10-${pad(int(6, 30))}`, true);
      }
    }
  }
  return tables;
}

/**
 * Builds the sample sales database in memory and returns its serialized image (open it with
 * `openDatabaseImage`). Deterministic for a given seed: the same seed gives the same rows as the
 * better-sqlite3 build this replaced (test/tools/sql/sales-dataset.test.ts pins their digest).
 */
export async function buildSalesDatabase(seed = DEFAULT_SALES_SEED): Promise<Uint8Array> {
  const tables = generateSalesRows(seed);
  const { capi, oo1 } = await loadSqlite();
  const db = new oo1.DB(":memory:", "c");
  try {
    db.exec(DDL);
    db.transaction(() => {
      for (const table of TABLES) {
        // One statement per table, its rows read from a JSON array: no per-row crossing into WebAssembly.
        const columns = tables[table][0]!.map((_, i) => `value ->> ${i}`).join(", ");
        db.exec({ sql: `INSERT INTO ${table} SELECT ${columns} FROM json_each(?)`, bind: [JSON.stringify(tables[table])] });
      }
    });
    return capi.sqlite3_js_db_export(db.pointer!);
  } finally {
    db.close();
  }
}

/**
 * The image of `image` holding only the rows of the named regions: orders (and their lines) booked
 * in them and customers of them; products and regions stay whole. What a row policy gives a caller
 * (`RowScopedQueryEngine`): the engine then holds no other rows to find.
 */
export async function restrictToRegions(image: Uint8Array, regions: readonly string[]): Promise<Uint8Array> {
  const { capi, oo1, wasm } = await loadSqlite();
  const db = new oo1.DB(":memory:", "c");
  try {
    const bytes = wasm.allocFromTypedArray(image);
    const flags = capi.SQLITE_DESERIALIZE_FREEONCLOSE | capi.SQLITE_DESERIALIZE_RESIZEABLE;
    db.checkRc(capi.sqlite3_deserialize(db.pointer!, "main", bytes, image.byteLength, image.byteLength, flags));
    const outside = "SELECT region_id FROM regions WHERE name NOT IN (SELECT value FROM json_each(?))";
    const bind = [JSON.stringify(regions)];
    db.transaction(() => {
      db.exec({ sql: `DELETE FROM order_lines WHERE order_id IN (SELECT order_id FROM orders WHERE region_id IN (${outside}))`, bind });
      db.exec({ sql: `DELETE FROM orders WHERE region_id IN (${outside})`, bind });
      db.exec({ sql: `DELETE FROM customers WHERE region_id IN (${outside})`, bind });
    });
    db.exec("VACUUM");
    return capi.sqlite3_js_db_export(db.pointer!);
  } finally {
    db.close();
  }
}
