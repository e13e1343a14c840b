// Large entities: an entity is at most 1 MiB, and a string or binary
// property at most 64 KiB. The guide keeps a large value (an employee's
// photo) in Blob storage and stores its address in the entity. partita
// serves Table storage only, so this example keeps the photo in a local
// file standing in for the blob, and shows the limits it works around.
package main

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"

	"github.com/partita/partita/examples/internal/ex"
)

func main() {
	env := ex.Start("large-entities")
	t := env.NewTable("largeentities")

	photo := make([]byte, 1<<20+1)
	rand.Read(photo)

	// A 64 KiB binary property is the most one property can hold...
	_, err := t.AddEntity(ex.Ctx, ex.JSON(map[string]any{"PartitionKey": "Sales", "RowKey": "000123",
		"Photo@odata.type": "Edm.Binary", "Photo": base64.StdEncoding.EncodeToString(photo[:64<<10+1])}), nil)
	ex.Check(ex.IsCode(err, "PropertyValueTooLarge"), "a 64 KiB+1 binary: got %v, want PropertyValueTooLarge", err)
	// ...and 1 MiB the most one entity can, even split over properties.
	big := map[string]any{"PartitionKey": "Sales", "RowKey": "000123"}
	for i := 0; i*(64<<10) < len(photo); i++ {
		chunk := photo[i*(64<<10) : min(len(photo), (i+1)*(64<<10))]
		big[fmt.Sprintf("Photo%02d@odata.type", i)] = "Edm.Binary"
		big[fmt.Sprintf("Photo%02d", i)] = base64.StdEncoding.EncodeToString(chunk)
	}
	_, err = t.AddEntity(ex.Ctx, ex.JSON(big), nil)
	ex.Check(ex.IsCode(err, "EntityTooLarge") || ex.IsCode(err, "RequestBodyTooLarge"), "a 1 MiB+ entity: got %v", err)

	// The guide's solution: the photo goes elsewhere, its address into the entity.
	dir, err := os.MkdirTemp("", "partita-large-entities-")
	ex.Must(err, "blob stand-in")
	defer os.RemoveAll(dir)
	blob := filepath.Join(dir, "photos", "Sales_000123.jpg")
	ex.Must(os.MkdirAll(filepath.Dir(blob), 0o755), "mkdir")
	ex.Must(os.WriteFile(blob, photo, 0o644), "write photo")
	ex.Add(t, map[string]any{"PartitionKey": "Sales", "RowKey": "000123", "Name": "Kim Jones", "Photo": "file://" + blob, "PhotoBytes": len(photo)})

	rows, _ := ex.Query(t, ex.Filter("PartitionKey eq 'Sales' and RowKey eq '000123'"))
	ex.Equal(len(rows), 1, "employees")
	var back []byte
	back, err = os.ReadFile(rows[0].Str("Photo")[len("file://"):])
	ex.Must(err, "read photo")
	ex.Check(bytes.Equal(back, photo), "the photo came back different")
	ex.Classes(env.Classes(), "point")

	fmt.Println("the entity holds the photo's address; the limits reject the photo itself")
	env.Finish()
}
