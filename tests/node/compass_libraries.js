// MongoDB Compass's own libraries against the served engine (tests/test_node_clients.py): its data service (the
// calls behind the instance view, the database and collection lists, collection stats, the performance tab), its
// explain-plan helper and its schema analyser. Prints one JSON line of observations.
const { connect } = require("mongodb-data-service");
const { ExplainPlan } = require("@mongodb-js/explain-plan-helper");
const { parseSchema } = require("mongodb-schema");
const { MongoClient } = require("mongodb");

(async () => {
  const uri = process.argv[2];
  const seed = new MongoClient(uri);
  await seed.connect();
  const coll = seed.db("compass_user").collection("orders");
  await coll.deleteMany({});
  await coll.insertMany(Array.from({ length: 60 }, (_, i) => ({ _id: i, status: i % 3 ? "open" : "closed",
    total: i * 2.5, items: [{ sku: "s" + (i % 4), qty: 1 + (i % 2) }] })));
  await coll.createIndex({ status: 1 });
  await seed.close();

  const ds = await connect({ connectionOptions: { connectionString: uri } });
  const out = {};
  const inst = await ds.instance();
  out.instance = { version: inst.build.version, isAtlas: inst.isAtlas, dataLake: inst.dataLake.isDataLake,
                   genuine: inst.genuineMongoDB.isGenuine, fcv: inst.featureCompatibilityVersion,
                 };
  out.listDatabases = (await ds.listDatabases()).map((d) => d.name).sort();
  const st = await ds.collectionStats("compass_user", "orders");
  out.collectionStats = { count: st.document_count, size: st.document_size, storage: st.storage_size,
                          indexes: st.index_count, indexSize: st.index_size, avg: st.avg_document_size };
  out.currentOp = (await ds.currentOp()).inprog.filter((o) => o.active).map((o) => o.op);
  const top = await ds.top();
  out.top = top.totals["compass_user.orders"] ? Object.keys(top.totals["compass_user.orders"]).sort() : null;
  const ss = await ds.serverStatus();
  out.serverStatus = [ss.ok, typeof ss.connections.current];
  const raw = await ds.explainFind("compass_user.orders", { status: "closed" }, {}, { explainVerbosity: "executionStats" });
  const plan = new ExplainPlan(raw);
  out.explain = { indexType: plan.indexType, usedIndexes: plan.usedIndexes.map((i) => i.index),
                  totalDocsExamined: plan.totalDocsExamined, totalKeysExamined: plan.totalKeysExamined,
                  nReturned: plan.nReturned, isCovered: plan.isCovered, inMemorySort: plan.inMemorySort };
  const docs = await ds.sample("compass_user.orders", { query: {}, size: 20 });
  const schema = await parseSchema(docs);
  out.schema = { count: schema.count, fields: schema.fields.map((f) => [f.name, f.types.map((t) => t.name)]) };
  out.indexes = (await ds.indexes("compass_user.orders")).map((i) => [i.name, typeof i.usageCount]);
  out.dbStats = (await ds.databaseStats("compass_user")).collection_count;
  await ds.disconnect();
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
