package stack

import (
	"bufio"
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/redis/go-redis/v9"
)

// redisUsers creates, on the Redis server of adminURL (whose user may manage ACLs), one user
// per service that has a line in deploy/redis/users.acl, named <prefix>-<service> with a fresh password, and
// returns each service's URL: adminURL with that user and password.
func redisUsers(ctx context.Context, adminURL, prefix string) (map[string]string, error) {
	lines, err := RedisUserRules()
	if err != nil {
		return nil, err
	}
	opts, err := redis.ParseURL(adminURL)
	if err != nil {
		return nil, fmt.Errorf("redis users: %w", err)
	}
	admin := redis.NewClient(opts)
	defer admin.Close()
	urls := map[string]string{}
	for _, svc := range ServiceNames() {
		rule, ok := lines[svc]
		if !ok { // a service that uses no Redis
			continue
		}
		password, err := RandomSecret()
		if err != nil {
			return nil, err
		}
		user := prefix + "-" + svc
		args := []any{"ACL", "SETUSER", user}
		for _, f := range rule {
			if f == ">PASSWORD" {
				f = ">" + password
			}
			args = append(args, f)
		}
		if err := admin.Do(ctx, args...).Err(); err != nil {
			return nil, fmt.Errorf("redis users: ACL SETUSER %s: %w", user, err)
		}
		u, err := url.Parse(adminURL)
		if err != nil {
			return nil, fmt.Errorf("redis users: %w", err)
		}
		u.User = url.UserPassword(user, password)
		urls[svc] = u.String()
	}
	return urls, nil
}

// aclFile is deploy/redis/users.acl of the repository: found from the working directory up
// (make run, go test), else beside this source file.
func aclFile() string {
	rel := filepath.Join("deploy", "redis", "users.acl")
	if dir, err := os.Getwd(); err == nil {
		for ; ; dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, rel)); err == nil {
				return filepath.Join(dir, rel)
			}
			if dir == filepath.Dir(dir) {
				break
			}
		}
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", rel)
}

// RedisUserRules reads deploy/redis/users.acl: each service's rules after
// `user linkmesh-<service>`.
func RedisUserRules() (map[string][]string, error) {
	f, err := os.Open(aclFile())
	if err != nil {
		return nil, fmt.Errorf("redis users: %w", err)
	}
	defer f.Close()
	out := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 || fields[0] != "user" || !strings.HasPrefix(fields[1], "linkmesh-") {
			continue
		}
		out[strings.TrimPrefix(fields[1], "linkmesh-")] = fields[2:]
	}
	return out, sc.Err()
}
