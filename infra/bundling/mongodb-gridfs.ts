// Stands in for the MongoDB driver's GridFS (~13 KB minified) in the Lambda bundles: the driver's
// index exports it, so a bundle keeps it, but Threadwise stores no files in GridFS. A use says so.
class LeftOut {
  constructor() {
    throw new Error("GridFS is left out of the Lambda bundles");
  }
}

export class GridFSBucket extends LeftOut {}
export class GridFSBucketReadStream extends LeftOut {}
export class GridFSBucketWriteStream extends LeftOut {}
