// What a Node.js driver user and a Mongoose user do, against the served engine (tests/test_node_clients.py).
// Prints one JSON line of observations; the Python test checks them against MongoDB's documented results.
const { MongoClient } = require("mongodb");
const mongoose = require("mongoose");

(async () => {
  const uri = process.argv[2];
  const out = {};
  const client = new MongoClient(uri);
  await client.connect();
  const db = client.db("node_user");
  await db.dropDatabase();
  const users = db.collection("users");
  // CRUD
  const ins = await users.insertMany([{ _id: 1, name: "ann", age: 31, tags: ["a", "b"] },
                                      { _id: 2, name: "bob", age: 25 }, { _id: 3, name: "cy", age: 40 }]);
  out.insertedCount = ins.insertedCount;
  const upd = await users.updateOne({ _id: 2 }, { $inc: { age: 1 }, $push: { tags: "new" } });
  out.update = [upd.matchedCount, upd.modifiedCount];
  const fam = await users.findOneAndUpdate({ name: "cy" }, { $set: { vip: true } }, { returnDocument: "after" });
  out.findOneAndUpdate = fam;  // driver 6+: the document itself
  out.deleted = (await users.deleteOne({ _id: 3 })).deletedCount;
  out.count = await users.countDocuments({ age: { $gt: 20 } });
  try { await users.insertOne({ _id: 1 }); } catch (e) { out.dupCode = e.code; }
  // indexes
  out.indexName = await users.createIndex({ age: 1 });
  out.indexes = (await users.indexes()).map((i) => i.name);
  // aggregate and explain
  out.agg = await users.aggregate([{ $group: { _id: null, total: { $sum: "$age" } } }]).toArray();
  const ex = await users.find({ age: { $gte: 26 } }).explain("executionStats");
  out.explainStage = ex.queryPlanner.winningPlan.inputStage ? ex.queryPlanner.winningPlan.inputStage.stage
                                                            : ex.queryPlanner.winningPlan.stage;
  out.explainDocs = ex.executionStats.totalDocsExamined;
  // cursors: batches and getMore
  await db.collection("many").insertMany(Array.from({ length: 250 }, (_, i) => ({ i })));
  const cur = db.collection("many").find({}, { batchSize: 50 }).sort({ i: 1 });
  let n = 0; let last = -1;
  for await (const d of cur) { n += 1; last = d.i; }
  out.cursor = [n, last];
  // transactions
  const session = client.startSession();
  await session.withTransaction(async () => {
    await users.insertOne({ _id: 10, name: "txn" }, { session });
    await users.updateOne({ _id: 1 }, { $set: { inTxn: true } }, { session });
  });
  await session.endSession();
  out.afterTxn = [await users.countDocuments({ _id: 10 }), (await users.findOne({ _id: 1 })).inTxn];
  // client bulkWrite (MongoDB 8.0 bulkWrite command)
  const bw = await client.bulkWrite([
    { namespace: "node_user.users", name: "insertOne", document: { _id: 20 } },
    { namespace: "node_user.other", name: "updateOne", filter: { _id: 1 }, update: { $set: { x: 1 } }, upsert: true },
    { namespace: "node_user.users", name: "deleteMany", filter: { _id: { $gte: 20 } } },
  ], { verboseResults: true });
  out.bulkWrite = [bw.insertedCount, bw.upsertedCount, bw.deletedCount, bw.updateResults.get(1).upsertedId];
  try {
    await client.bulkWrite([{ namespace: "node_user.users", name: "insertOne", document: { _id: 1 } }]);
  } catch (e) { out.bulkWriteError = [e.name, [...e.writeErrors.values()].map((w) => w.code)]; }
  await client.close();

  // Mongoose
  await mongoose.connect(uri, { dbName: "mongoose_user" });
  await mongoose.connection.db.dropDatabase();
  const Post = mongoose.model("Post", new mongoose.Schema({
    title: { type: String, required: true }, votes: { type: Number, default: 0 },
    author: { type: String, index: true },
  }, { timestamps: true }));
  await Post.init();  // builds the indexes
  const p = await Post.create({ title: "hello", author: "ann" });
  await Post.create([{ title: "two", author: "bob", votes: 3 }, { title: "three", author: "ann", votes: 5 }]);
  await Post.updateOne({ _id: p._id }, { $inc: { votes: 2 } });
  const found = await Post.find({ author: "ann" }).sort({ votes: -1 }).lean();
  out.mongooseFind = found.map((d) => [d.title, d.votes, typeof d.createdAt]);
  try { await Post.create({ author: "nobody" }); } catch (e) { out.mongooseValidation = e.name; }
  out.mongooseAgg = await Post.aggregate([{ $group: { _id: "$author", votes: { $sum: "$votes" } } },
                                          { $sort: { _id: 1 } }]);
  out.mongooseIndexes = Object.keys(await Post.collection.indexInformation()).sort();
  const s = await mongoose.startSession();
  await s.withTransaction(async () => { await Post.create([{ title: "in txn", author: "cy" }], { session: s }); });
  await s.endSession();
  out.mongooseCount = await Post.countDocuments();
  await mongoose.disconnect();
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
